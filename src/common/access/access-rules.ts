import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Actor } from '../auth/actor.js';
import { AppException } from '../errors/app.exception.js';
import { cappedRole, PROJECT_ROLES, roleAtLeast, type ProjectRole } from './project-roles.js';

/**
 * # The access rules, written once
 *
 * Every query that reads, lists, counts, searches, changes or deletes a task, document, project or registered
 * GitHub repository composes the predicates below; nothing else states who may see or change what. The rule
 * table (caller kind × object kind × action → allowed / not_found / forbidden) is checked cell by cell in
 * `test/medium/access-rules.medium-spec.ts`.
 *
 * ## Who: the {@link Actor}
 * The user on whose behalf a call runs, its pins (`projectIds`, `repos`; `null` = not pinned) and, for a project
 * session token, the role cap. API keys with `projectIds`, project session tokens and agent runs are pinned.
 *
 * ## The rules
 * - **Pins**: a pinned actor sees only objects inside its projects; an object without a project (a personal
 *   task, a document without a project) is outside every pin. Creating one needs an unpinned actor.
 * - **Tasks**: visible and editable to their creator and assignee; deletable by the creator only. Assignable
 *   only to a member of the task's project, or, for a task without a project, to the actor itself.
 * - **Documents**: visible to the author; when public, to the members of its project, or to everyone for a
 *   public document without a project. A private document is its author's only, even inside a project.
 *   Editable (and deletable) by the author only, and inside a project only while at least an editor there.
 * - **Projects**: visible to members; the actor's role is the member role capped by the token's role.
 * - **GitHub repositories**: every registered one for an unpinned actor, else only those in `repos` (any case).
 * - **Agent runs**: their starter's only, inside its pins. Deciding about a run's writes (approve, reject, cancel)
 *   needs the authority of the write: an effective role of at least editor in the run's project, whatever the
 *   credential ({@link mayDecideAgentRun}); an approved call runs with the rights of both the run and the approver
 *   ({@link narrowestActor}).
 * - **Indexing jobs**: a project's jobs to its members; a job without a project to its creator, unpinned only.
 * - **Audit entries**: a user's own (whoever acted through which of its credentials); everyone's to an admin only,
 *   on the admin routes, which no predicate here widens.
 *
 * ## Outcomes
 * One answer for "does not exist" and "exists but you may not see it": **not_found** (never reveals existence).
 * **forbidden** only for an object the actor can see but may not change in that way ({@link accessDenied}).
 *
 * ## API for repositories (Kysely)
 * Each predicate takes the actor and the alias (or qualified column) of the object in the statement and returns a
 * Kysely `sql<SqlBool>` fragment with the actor's values bound as parameters, to be passed to `.where(…)` or
 * combined with `sql`. Aliases and columns come from code, never from input. Stable names:
 * {@link insidePins}, {@link visibleTask}, {@link editableTask}, {@link deletableTask}, {@link visibleDocument},
 * {@link editableDocument}, {@link visibleProject}, {@link projectRoleAtLeast}, {@link visibleRepo},
 * {@link visibleAgentRun}, {@link visibleIndexingJob}, {@link visibleAuditEntry}, {@link viewerStatScopes},
 * {@link visibleOutsideStatScopes}.
 * For objects already loaded: {@link isProjectAllowed}, {@link isRepoAllowed}, {@link mayCreateWithoutProject}, {@link mayAssignTask},
 * {@link effectiveRole}, {@link accessOutcome}, {@link accessDenied}, {@link mayDecideAgentRun}, {@link narrowestActor}.

 */

// ---------------------------------------------------------------------------------------------------------------
// Kysely predicates
// ---------------------------------------------------------------------------------------------------------------

const ref = (alias: string, column: string) => sql.ref(`${alias}.${column}`);
const TRUE = sql<SqlBool>`true`;
const FALSE = sql<SqlBool>`false`;

/** The pin rule on a project column (`'t.project_id'`, `'p.id'`): unpinned actors pass; pinned ones only inside their projects. */
export function insidePins(actor: Actor, projectColumn: string): RawBuilder<SqlBool> {
  if (actor.projectIds === null) return TRUE;
  // `= ANY` is never true for a NULL project_id, so an object without a project is outside every pin.
  return sql<SqlBool>`${sql.ref(projectColumn)} = ANY(${[...actor.projectIds]}::uuid[])`;
}

/** Tasks `alias` the actor may see: created by or assigned to them, inside their pins. */
export function visibleTask(actor: Actor, alias = 't'): RawBuilder<SqlBool> {
  return sql<SqlBool>`((${ref(alias, 'creatorId')} = ${actor.userId} OR ${ref(alias, 'assigneeId')} = ${actor.userId}) AND ${insidePins(actor, `${alias}.project_id`)})`;
}

/** Tasks the actor may update: the same people who see them (creator and assignee). */
export function editableTask(actor: Actor, alias = 't'): RawBuilder<SqlBool> {
  return visibleTask(actor, alias);
}

/** Tasks the actor may delete: its creator only (an assignee sees the task but gets forbidden). */
export function deletableTask(actor: Actor, alias = 't'): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${ref(alias, 'creatorId')} = ${actor.userId} AND ${insidePins(actor, `${alias}.project_id`)})`;
}

/** Documents `alias` the actor may see: their own; a public one of a project they are a member of; a public one without a project. */
export function visibleDocument(actor: Actor, alias = 'd'): RawBuilder<SqlBool> {
  return sql<SqlBool>`((${ref(alias, 'authorId')} = ${actor.userId} OR (${ref(alias, 'isPublic')} AND (${ref(alias, 'projectId')} IS NULL OR EXISTS (
      SELECT 1 FROM project_members access_vm WHERE access_vm.project_id = ${ref(alias, 'projectId')} AND access_vm.user_id = ${actor.userId}))))
    AND ${insidePins(actor, `${alias}.project_id`)})`;
}

/**
 * The BM25 statistic scopes (the column `scopeColumn`, values of `rag_stat_scope`, migration 1764015000000) whose
 * documents the actor may see: {@link visibleDocument} cut along scopes, so search statistics count only what the
 * caller may see. A scope is `u:<author>:<project or empty>` for a private document, `p:<project or empty>` for a
 * public one. The actor gets its own private scopes (of every project, or of its pinned ones), the public scopes of
 * projects it is a member of (inside its pins) and, unpinned, the public scope without a project. One difference
 * on purpose: a public document of a project its author has left stays visible to the author (author rule) but is
 * counted in the project's scope, for members only. `test/medium/rag-scopes.medium-spec.ts` checks this against
 * {@link visibleDocument} for every caller kind. The column must be `COLLATE "C"` (the private scopes are one range).
 */
export function viewerStatScopes(actor: Actor, scopeColumn: string): RawBuilder<SqlBool> {
  const scope = sql.ref(scopeColumn);
  const userPrefix = `u:${actor.userId}:`;
  if (actor.projectIds === null) {
    return sql<SqlBool>`(${scope} = ANY(ARRAY(SELECT 'p:' || access_sm.project_id::text FROM project_members access_sm WHERE access_sm.user_id = ${actor.userId}) || ARRAY['p:'])
      OR (${scope} >= ${userPrefix} AND ${scope} < ${`u:${actor.userId};`}))`;
  }
  const pins = [...actor.projectIds];
  return sql<SqlBool>`${scope} = ANY(ARRAY(SELECT 'p:' || access_sm.project_id::text FROM project_members access_sm
      WHERE access_sm.user_id = ${actor.userId} AND access_sm.project_id = ANY(${pins}::uuid[])) || ${pins.map((projectId) => `${userPrefix}${projectId}`)}::text[])`;
}

/**
 * Documents `alias` the actor may see ({@link visibleDocument}) whose statistic scope is not among
 * {@link viewerStatScopes}: the one difference on purpose between the two, its own public documents in a project
 * it is no longer a member of (inside its pins). A search that filters by the viewer's scopes adds these, so that it
 * covers exactly the documents the caller may see (checked in `test/medium/rag-scopes.medium-spec.ts`).
 */
export function visibleOutsideStatScopes(actor: Actor, alias = 'd'): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${ref(alias, 'authorId')} = ${actor.userId} AND ${ref(alias, 'isPublic')} AND ${ref(alias, 'projectId')} IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM project_members access_om WHERE access_om.project_id = ${ref(alias, 'projectId')} AND access_om.user_id = ${actor.userId})
    AND ${insidePins(actor, `${alias}.project_id`)})`;
}

/** Documents the actor may change or delete: its own, and inside a project only while at least an editor there (after the cap). */
export function editableDocument(actor: Actor, alias = 'd'): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${ref(alias, 'authorId')} = ${actor.userId} AND ${insidePins(actor, `${alias}.project_id`)}
    AND (${ref(alias, 'projectId')} IS NULL OR ${projectRoleAtLeast(actor, 'editor', `${alias}.project_id`)}))`;
}

/** Projects `alias` the actor may see: it is a member, inside its pins. */
export function visibleProject(actor: Actor, alias = 'p'): RawBuilder<SqlBool> {
  return projectRoleAtLeast(actor, 'viewer', `${alias}.id`);
}

/**
 * The project named by `projectColumn` is one where the actor's effective role (member role capped by the
 * token's) is at least `minimum`, inside its pins.
 */
export function projectRoleAtLeast(actor: Actor, minimum: ProjectRole, projectColumn: string): RawBuilder<SqlBool> {
  const roles = memberRolesReaching(actor, minimum);
  if (roles.length === 0) return FALSE;
  const roleTest = roles.length === PROJECT_ROLES.length ? TRUE : sql<SqlBool>`access_pm.role = ANY(${roles}::text[])`;
  return sql<SqlBool>`(${insidePins(actor, projectColumn)} AND EXISTS (
      SELECT 1 FROM project_members access_pm WHERE access_pm.project_id = ${sql.ref(projectColumn)} AND access_pm.user_id = ${actor.userId} AND ${roleTest}))`;
}

/** Registered repositories `alias` the actor may reach: all when unpinned, else those named in its `repos` (any case). */
export function visibleRepo(actor: Actor, alias = 'r'): RawBuilder<SqlBool> {
  if (actor.repos === null) return TRUE;
  return sql<SqlBool>`lower(${ref(alias, 'fullName')}) = ANY(${actor.repos.map((repo) => repo.toLowerCase())}::text[])`;
}

/** Agent runs `alias` the actor may see (and stop, answer, …): the ones it started, inside its pins. */
export function visibleAgentRun(actor: Actor, alias = 'r'): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${ref(alias, 'userId')} = ${actor.userId} AND ${insidePins(actor, `${alias}.project_id`)})`;
}

/** Audit entries `alias` the actor may see: the ones its user made (with any credential). */
export function visibleAuditEntry(actor: Actor, alias = 'a'): RawBuilder<SqlBool> {
  return sql<SqlBool>`${ref(alias, 'userId')} = ${actor.userId}`;
}

/** Indexing jobs `alias` the actor may see: a project's to its members; one without a project to its creator, when unpinned. */
export function visibleIndexingJob(actor: Actor, alias = 'j'): RawBuilder<SqlBool> {
  return sql<SqlBool>`(CASE WHEN ${ref(alias, 'projectId')} IS NULL
      THEN ${ref(alias, 'createdBy')} = ${actor.userId} AND ${insidePins(actor, `${alias}.project_id`)}
      ELSE ${projectRoleAtLeast(actor, 'viewer', `${alias}.project_id`)} END)`;
}

/** Member roles that give the actor at least `minimum` once capped by its token's role. */
function memberRolesReaching(actor: Actor, minimum: ProjectRole): ProjectRole[] {
  return PROJECT_ROLES.filter((role) => roleAtLeast(cappedRole(role, actor.projectRoleCap), minimum));
}

// ---------------------------------------------------------------------------------------------------------------
// The same rules in code, for objects already loaded
// ---------------------------------------------------------------------------------------------------------------

/** The pin rule for a loaded object or a named project: the same rule as {@link insidePins}. */
export function isProjectAllowed(actor: Actor, projectId: string | null): boolean {
  return actor.projectIds === null || (projectId !== null && actor.projectIds.includes(projectId));
}

/** The repository pin: the same rule as {@link visibleRepo}. */
export function isRepoAllowed(actor: Actor, fullName: string): boolean {
  return actor.repos === null || actor.repos.some((repo) => repo.toLowerCase() === fullName.toLowerCase());
}

/**
 * Creating an object without a project is outside every pin: a pinned caller must name one of its projects.
 * Returns false when the creation would be refused (400 invalid_argument on `project_id`).
 */
export function mayCreateWithoutProject(actor: Actor): boolean {
  return actor.projectIds === null;
}

/**
 * Who a task may be assigned to: a member (any role) of the task's project; for a task without a project, only the
 * actor itself (so no one can push a task, and the text in it, into a stranger's lists and MCP clients).
 * `assigneeRole` is the assignee's member role in the task's project, null when not a member (or no project).
 */
export function mayAssignTask(
  actor: Actor,
  projectId: string | null,
  assigneeId: string,
  assigneeRole: ProjectRole | null,
): boolean {
  return projectId === null ? assigneeId === actor.userId : assigneeRole !== null;
}

/** The actor's role in a project it is a member of: the member role capped by a project token's role. */
export function effectiveRole(actor: Actor, memberRole: ProjectRole): ProjectRole {
  return cappedRole(memberRole, actor.projectRoleCap);
}

export type AccessOutcome = 'allowed' | 'not_found' | 'forbidden';

/** Invisible wins over not permitted: an object the actor cannot see is not found, whatever it asked to do. */
export function accessOutcome(visible: boolean, permitted: boolean): AccessOutcome {
  if (!visible) return 'not_found';
  return permitted ? 'allowed' : 'forbidden';
}

/** The error for an action the actor may not take on an object: not_found when it cannot even see it, else forbidden. */
export function accessDenied(visible: boolean, object: string, reason: string): AppException {
  return visible ? AppException.forbidden(reason) : AppException.notFound(object);
}

/** The minimum effective project role that may approve, reject or cancel an agent run's work (that of its writes). */
export const AGENT_RUN_DECIDER_ROLE: ProjectRole = 'editor';

/**
 * Whether an actor who sees an agent run (visibleAgentRun) may decide about its writes: approve or reject a waiting
 * call, with or without edited arguments, or cancel the run. `role` is the actor's effective role in the run's project
 * (member role capped by a project token's; null when not a member). A viewer, or a viewer token, may not.
 */
export function mayDecideAgentRun(role: ProjectRole | null): boolean {
  return role !== null && roleAtLeast(role, AGENT_RUN_DECIDER_ROLE);
}

/**
 * The rights two actors of the same user share: the intersection of their pins and the lower of their role caps.
 * An approved agent call runs as this of the run and the approver, so an approval never lends a run rights its
 * approver lacks (nor the other way round).
 */
export function narrowestActor(a: Actor, b: Actor): Actor {
  if (a.userId !== b.userId) throw new Error('narrowestActor: two different users');
  const both = <T extends string>(
    x: readonly T[] | null,
    y: readonly T[] | null,
    same: (p: T, q: T) => boolean,
  ): readonly T[] | null =>
    x === null ? y : y === null ? x : x.filter((item) => y.some((other) => same(item, other)));
  const cap =
    a.projectRoleCap === undefined
      ? b.projectRoleCap
      : b.projectRoleCap === undefined
        ? a.projectRoleCap
        : cappedRole(a.projectRoleCap, b.projectRoleCap);
  return {
    userId: a.userId,
    projectIds: both(a.projectIds, b.projectIds, (p, q) => p === q),
    repos: both(a.repos, b.repos, (p, q) => p.toLowerCase() === q.toLowerCase()),
    ...(cap !== undefined ? { projectRoleCap: cap as 'editor' | 'viewer' } : {}),
  };
}
