/**
 * Project roles and their order, an access rule (who may do what inside a project). The projects module
 * re-exports them (`modules/projects/project-role.ts`) for its DTOs.
 */
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

export function isProjectRole(value: string): value is ProjectRole {
  return (PROJECT_ROLES as readonly string[]).includes(value);
}
