/**
 * On whose behalf a service call runs, however the caller authenticated (user access token, project
 * session token, personal API key, or an agent run started by one of those). Services take it as an
 * explicit argument and filter every query by it; nothing reads "the current user" from globals.
 */
export interface Actor {
  /** Whose data: the user, the key owner, or the user who minted the project session token. */
  userId: string;
  /** `null` = not pinned. Otherwise only these projects exist for this caller (anything else is not found). */
  projectIds: readonly string[] | null;
  /** `null` = not pinned. Otherwise only these registered repositories (`owner/name`) exist for this caller. */
  repos: readonly string[] | null;
  /** Set when acting through a project session token: caps the caller's role in that project. */
  projectRoleCap?: 'editor' | 'viewer';
}
