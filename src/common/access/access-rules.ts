import type { Actor } from '../auth/actor.js';

/**
 * The access rules as SQL, written once. Every query that reads, counts, searches or changes tasks or
 * documents composes these predicates; nothing else states who may see what.
 *
 * Pins (API.md, "Rules that hold everywhere"): a pinned caller (an API key with `projectIds`, a project
 * session token, an agent run) sees only objects inside its projects, and an object with no project (a
 * personal task, a document without a project) is outside every pin. In SQL, `project_id = ANY(pins)` is
 * never true for a NULL project_id, so this needs no special case; an empty pin list matches nothing.
 *
 * The predicates take the SQL placeholders of the actor's values (`$1`, `:actorId`, …) so they fit both the
 * positional statements and TypeORM's named parameters; {@link actorSqlValues} gives the values.
 */
export interface ActorPlaceholders {
  /** The actor's user id (uuid). */
  user: string;
  /** The actor's pinned project ids (uuid[]), or NULL when not pinned. */
  pins: string;
}

/** The values behind {@link ActorPlaceholders}, in that order: user id, pinned project ids or null. */
export function actorSqlValues(actor: Actor): [string, string[] | null] {
  return [actor.userId, actor.projectIds === null ? null : [...actor.projectIds]];
}

/** The pin rule in code, for an object already loaded: the same rule as {@link insidePinsSql}. */
export function isProjectAllowed(actor: Actor, projectId: string | null): boolean {
  return actor.projectIds === null || (projectId !== null && actor.projectIds.includes(projectId));
}

/** The repository pin: unpinned callers see every registered repository, pinned ones only theirs (`owner/name`, any case). */
export function isRepoAllowed(actor: Actor, fullName: string): boolean {
  return actor.repos === null || actor.repos.some((repo) => repo.toLowerCase() === fullName.toLowerCase());
}

/** The pin rule on a project column: unpinned callers pass; pinned ones only inside their projects. */
export function insidePinsSql(projectColumn: string, pins: string): string {
  return `(${pins}::uuid[] IS NULL OR ${projectColumn} = ANY(${pins}::uuid[]))`;
}

/** Tasks `alias` the actor may see: created by or assigned to them, inside their pins. */
export function visibleTaskSql(alias: string, actor: ActorPlaceholders): string {
  return `((${alias}.creator_id = ${actor.user}::uuid OR ${alias}.assignee_id = ${actor.user}::uuid) AND ${insidePinsSql(`${alias}.project_id`, actor.pins)})`;
}

/**
 * Documents `alias` the actor may see: their own; a public one of a project they are a member of; a public one
 * without a project; always inside their pins. A private document is its author's only, even inside a project.
 */
export function visibleDocumentSql(alias: string, actor: ActorPlaceholders): string {
  return `((${alias}.author_id = ${actor.user}::uuid OR (${alias}.is_public AND (${alias}.project_id IS NULL OR EXISTS (
             SELECT 1 FROM project_members vm WHERE vm.project_id = ${alias}.project_id AND vm.user_id = ${actor.user}::uuid))))
           AND ${insidePinsSql(`${alias}.project_id`, actor.pins)})`;
}

/**
 * The BM25 statistic scopes (column `scope`, see migration 1764015000000 and `rag_stat_scope`) the actor may see:
 * the visibility rule of {@link visibleDocumentSql} cut along scopes, so search statistics count exactly the
 * documents a caller may see. A scope is `u:<author>:<project or empty>` for a private document and
 * `p:<project or empty>` for a public one. The actor sees its own private scopes (of every project, or of its
 * pinned ones), the public scopes of projects it is a member of (inside its pins), and the public scope without
 * a project (unpinned only). One difference, on purpose: a public document of a project its author has left
 * stays visible to the author (author rule) but its scope is the project's, so its words only ever count for
 * members. test/medium/rag-scopes.medium-spec.ts checks the two rules against each other for every caller kind.
 */
export function viewerStatScopesSql(scope: string, actor: ActorPlaceholders): string {
  return `(${scope} = ANY(ARRAY(SELECT 'p:' || sm.project_id::text FROM project_members sm
                              WHERE sm.user_id = ${actor.user}::uuid AND ${insidePinsSql('sm.project_id', actor.pins)})
                        || ARRAY(SELECT 'u:' || ${actor.user}::text || ':' || sp::text FROM unnest(${actor.pins}::uuid[]) sp)
                        || CASE WHEN ${actor.pins}::uuid[] IS NULL THEN ARRAY['p:'] ELSE ARRAY[]::text[] END)
           OR (${actor.pins}::uuid[] IS NULL AND ${scope} >= 'u:' || ${actor.user}::text || ':' AND ${scope} < 'u:' || ${actor.user}::text || ';'))`;
}

/**
 * Creating an object without a project is outside every pin: a pinned caller must name one of its projects.
 * Returns false when the creation would be refused (400 invalid_argument on `project_id`).
 */
export function mayCreateWithoutProject(actor: Actor): boolean {
  return actor.projectIds === null;
}
