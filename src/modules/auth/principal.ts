export type UserRole = 'admin' | 'member';

/** What a project session token may do in its project, at most. */
export type ProjectTokenRole = 'editor' | 'viewer';

/** A signed-in user calling Area B with an access token. */
export interface UserPrincipal {
  kind: 'user';
  userId: string;
  role: UserRole;
  /** Key for per-caller rate limits. */
  trackerId: string;
}

/**
 * A project session token (`atp_…`) on a route that opted in with @AllowProjectToken(). It acts as the
 * user who minted it, inside its one project only, with at most the token's role.
 */
export interface ProjectTokenPrincipal {
  kind: 'project-token';
  /** The user who minted the token. */
  userId: string;
  /** Never admin: a project token carries no installation-wide power, whoever minted it. */
  role: 'member';
  projectId: string;
  tokenId: string;
  tokenRole: ProjectTokenRole;
  trackerId: string;
}

export type Principal = UserPrincipal | ProjectTokenPrincipal;
