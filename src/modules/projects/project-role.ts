export const PROJECT_ROLES = ['owner', 'editor', 'viewer'] as const;
export type ProjectRole = (typeof PROJECT_ROLES)[number];

const RANK: Record<ProjectRole, number> = { viewer: 1, editor: 2, owner: 3 };

export function roleAtLeast(role: ProjectRole, minimum: ProjectRole): boolean {
  return RANK[role] >= RANK[minimum];
}

/** The lower of a member's role and a cap (a project session token's role). */
export function cappedRole(role: ProjectRole, cap: ProjectRole | undefined): ProjectRole {
  return cap !== undefined && RANK[cap] < RANK[role] ? cap : role;
}
