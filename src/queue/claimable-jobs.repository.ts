import { Injectable } from '@nestjs/common';
import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { DB } from '../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../database/kysely.provider.js';

/** The tables whose rows are jobs that workers claim. */
export type ClaimableTableName = 'agentRuns' | 'indexingJobs';

/**
 * A table of claimable jobs: every such table has `id`, `status` (`queued` → `running` → final), `attempts`
 * (claims so far), `heartbeat_at`, `started_at` and `created_at`; the claim fences every later write.
 */
export interface ClaimableTable<T extends ClaimableTableName = ClaimableTableName> {
  table: T;
  /** Names the kind in the job transition log lines ('indexing', 'agent_run'). */
  kind: string;
  /**
   * What fences a claim's writes. `claim_token`: a fresh uuid per claim, cleared when the claim is handed back
   * (agent runs: a pause restarts `attempts`, so a claim number could come round again). `attempts`: the claim's
   * number, bumped by every claim (indexing jobs).
   */
  fencedBy: 'claimToken' | 'attempts';
  /** The column a claim holder watches for a cancel request while it runs, when the kind has one. */
  cancelFlag?: 'cancelRequested';
  /** Whose job it is (fair shares between users: claimNext), and the project it belongs to (shares within a user). */
  owner: 'userId' | 'createdBy';
  project: 'projectId';
  /** A column counting claims handed back on purpose (a slice that yielded, a drain): they are not interruptions, so `StaleJob.attempts` leaves them out. */
  handBacks?: 'slices';
}

/** A claim held by this process: the row and the fencing token every write of the claim names. */
export interface Claim<T extends ClaimableTableName = ClaimableTableName> {
  table: ClaimableTable<T>;
  id: string;
  token: string | number;
  /** When this process claimed it (Date.now()), for the durations of the transition log lines. */
  claimedAt?: number;
  /** The request that queued the job (the row's `trace_id`): every log line of the job names it. */
  requestId?: string | null;
}

/** What a claim holder learns when it looks at its row: still ours, and whether a cancel was asked for. */
export interface ClaimState {
  held: boolean;
  cancelRequested: boolean;
}

/** A row the recovery sweep looks at: running with a dead worker, or queued for longer than the stale bound. */
export interface StaleJob {
  id: string;
  status: 'queued' | 'running';
  /** Claims so far, less those handed back on purpose (ClaimableTable.handBacks). */
  attempts: number;
}

/** Stands for "no owner" and "no project" in the fair claim's index (`*_waiting_idx`, written with the same expression). */
const NO_ONE = sql.raw(`'00000000-0000-0000-0000-000000000000'::uuid`);

/** How many of each (owner, project)'s oldest queued jobs the fair claim ranks: enough that workers claiming at once, each skipping the others' locked rows, still find one. */
const CANDIDATES_PER_SHARE = 8;

/** A `running` row whose worker is gone: no heartbeat, or none for `staleAfterMs`. The one stale rule of every job table. */
export function staleHeartbeat(staleAfterMs: number): RawBuilder<boolean> {
  return sql<boolean>`(heartbeat_at IS NULL OR heartbeat_at < now() - make_interval(secs => ${staleAfterMs / 1000}))`;
}

/**
 * The claim, heartbeat and recovery statements of every job table, written once and parameterised by the table.
 * They are written with the `sql` tag because the table is a parameter (the builder types one table at a time);
 * identifiers come from {@link ClaimableTable}, never from input.
 */
@Injectable()
export class ClaimableJobsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /**
   * Claims a job atomically: `queued`, or `running` with a dead worker's stale heartbeat, becomes `running` under a
   * new claim (attempts + 1). A duplicate queue entry or a live worker's job is simply not claimed (undefined).
   */
  async claim<T extends ClaimableTableName>(
    spec: ClaimableTable<T>,
    id: string,
    staleAfterMs: number,
    newToken: string,
  ): Promise<{ row: Selectable<DB[T]>; token: string | number } | undefined> {
    const setToken = spec.fencedBy === 'claimToken' ? sql`, claim_token = ${newToken}` : sql``;
    const { rows } = await sql<Selectable<DB[T]>>`
      UPDATE ${sql.table(spec.table)} SET status = 'running', started_at = coalesce(started_at, now()), heartbeat_at = now(), attempts = attempts + 1${setToken}
      WHERE id = ${id} AND (status = 'queued' OR (status = 'running' AND ${staleHeartbeat(staleAfterMs)}))
      RETURNING *`.execute(this.db);
    const row = rows[0];
    if (!row) return undefined;
    return { row, token: spec.fencedBy === 'claimToken' ? newToken : (row as { attempts: number }).attempts };
  }

  /**
   * Claims the job that is fairest to run next, whichever queue entry asked: among queued jobs (and running ones
   * whose worker died), the one whose owner has the fewest running jobs and was served longest ago (never served
   * first), then the same within the owner's projects, then the oldest. So a user's backlog, however long, delays
   * another user's first job by at most the jobs already running. SKIP LOCKED lets several workers claim at once.
   * The claim also stamps `claimed_at`, the owner's "last served" time. See {@link claimNextStatement}.
   */
  async claimNext<T extends ClaimableTableName>(
    spec: ClaimableTable<T>,
    staleAfterMs: number,
    newToken: string,
  ): Promise<{ row: Selectable<DB[T]>; token: string | number } | undefined> {
    const { rows } = await this.claimNextStatement(spec, staleAfterMs, newToken).execute(this.db);
    const row = rows[0];
    if (!row) return undefined;
    return { row, token: spec.fencedBy === 'claimToken' ? newToken : (row as { attempts: number }).attempts };
  }

  /**
   * The statement of {@link claimNext} (public so that its plan can be examined). Only the few jobs that could come
   * first are ranked, so a claim costs the same behind one job or behind thousands of one owner: the distinct
   * (owner, project) pairs with queued work are walked through `*_waiting_idx` (one probe per pair), each pair
   * offers its oldest {@link CANDIDATES_PER_SHARE} jobs, and running jobs with a dead worker join them. Each candidate
   * is then ranked by index probes (`*_active_idx`, `*_claimed_idx`). Owners are compared with `=`, so a job
   * without an owner (a system reindex) counts as never served.
   */
  claimNextStatement<T extends ClaimableTableName>(
    spec: ClaimableTable<T>,
    staleAfterMs: number,
    newToken: string,
  ): RawBuilder<Selectable<DB[T]>> {
    const table = sql.table(spec.table);
    const owner = sql.ref(spec.owner);
    const project = sql.ref(spec.project);
    const ownerKey = sql`coalesce(${owner}, ${NO_ONE})`;
    const projectKey = sql`coalesce(${project}, ${NO_ONE})`;
    const setToken = spec.fencedBy === 'claimToken' ? sql`, claim_token = ${newToken}` : sql``;
    const stale = staleHeartbeat(staleAfterMs);
    const claimable = sql`(status = 'queued' OR (status = 'running' AND ${stale}))`;
    const live = sql`(o.status = 'running' AND o.heartbeat_at IS NOT NULL AND o.heartbeat_at >= now() - make_interval(secs => ${staleAfterMs / 1000}))`;
    return sql<Selectable<DB[T]>>`
      UPDATE ${table} SET status = 'running', started_at = coalesce(started_at, now()), heartbeat_at = now(), claimed_at = clock_timestamp(), attempts = attempts + 1${setToken}
      WHERE id = (
        WITH RECURSIVE shares(owner, project) AS (
          (SELECT ${ownerKey}, ${projectKey} FROM ${table} WHERE status = 'queued' ORDER BY 1, 2 LIMIT 1)
          UNION ALL
          SELECT n.* FROM shares s CROSS JOIN LATERAL (
            SELECT ${ownerKey}, ${projectKey} FROM ${table}
            WHERE status = 'queued' AND (${ownerKey}, ${projectKey}) > (s.owner, s.project)
            ORDER BY 1, 2 LIMIT 1
          ) n
        ), candidates AS (
          SELECT h.id FROM shares s CROSS JOIN LATERAL (
            SELECT id FROM ${table}
            WHERE status = 'queued' AND ${ownerKey} = s.owner AND ${projectKey} = s.project
            ORDER BY created_at, id LIMIT ${sql.lit(CANDIDATES_PER_SHARE)}
          ) h
          UNION ALL
          SELECT id FROM ${table} WHERE status = 'running' AND ${stale}
        )
        SELECT q.id FROM ${table} q
        WHERE q.id = ANY (ARRAY(SELECT id FROM candidates)) AND ${claimable}
        ORDER BY
          (SELECT count(*) FROM ${table} o WHERE o.${owner} = q.${owner} AND ${live}),
          (SELECT max(o.claimed_at) FROM ${table} o WHERE o.${owner} = q.${owner}) NULLS FIRST,
          (SELECT count(*) FROM ${table} o WHERE o.${project} = q.${project} AND ${live}),
          (SELECT max(o.claimed_at) FROM ${table} o WHERE o.${project} = q.${project}) NULLS FIRST,
          q.created_at, q.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
      ) AND ${claimable}
      RETURNING *`;
  }

  /**
   * Whether a job of another owner, or of another project of the same owner, than job `exceptId` waits to be claimed
   * (a slice of work makes way only for those: two large documents of one project would only trade places). Asked
   * after every batch, so it probes `*_waiting_idx` on either side of the job's own (owner, project) instead of
   * reading that pair's backlog.
   */
  async othersWaiting(spec: ClaimableTable, exceptId: string, staleAfterMs: number): Promise<boolean> {
    const table = sql.table(spec.table);
    const owner = sql.ref(spec.owner);
    const project = sql.ref(spec.project);
    const share = sql`(coalesce(${owner}, ${NO_ONE}), coalesce(${project}, ${NO_ONE}))`;
    const { rows } = await sql<{ waiting: boolean }>`
      SELECT EXISTS (
        SELECT 1 FROM (SELECT coalesce(${owner}, ${NO_ONE}) AS owner, coalesce(${project}, ${NO_ONE}) AS project FROM ${table} WHERE id = ${exceptId}) m
        CROSS JOIN LATERAL (
          (SELECT 1 FROM ${table} WHERE status = 'queued' AND ${share} < (m.owner, m.project) LIMIT 1)
          UNION ALL
          (SELECT 1 FROM ${table} WHERE status = 'queued' AND ${share} > (m.owner, m.project) LIMIT 1)
        ) w
      ) OR EXISTS (
        SELECT 1 FROM ${table} w, ${table} x
        WHERE x.id = ${exceptId} AND w.id <> x.id
          AND w.status = 'running' AND (w.heartbeat_at IS NULL OR w.heartbeat_at < now() - make_interval(secs => ${staleAfterMs / 1000}))
          AND (w.${owner} IS DISTINCT FROM x.${owner} OR w.${project} IS DISTINCT FROM x.${project})
      ) AS waiting`.execute(this.db);
    return rows[0]?.waiting === true;
  }

  /** Counts an owner's jobs that are queued or running (the per-user caps). */
  async activeOf(spec: ClaimableTable, ownerId: string): Promise<number> {
    const { rows } = await sql<{ n: string | number }>`
      SELECT count(*) AS n FROM ${sql.table(spec.table)} WHERE ${sql.ref(spec.owner)} = ${ownerId} AND status IN ('queued', 'running')`.execute(
      this.db,
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Keeps the claim alive; a claim no longer held (finished, cancelled, taken over) is not touched. */
  async heartbeat(claim: Claim): Promise<ClaimState> {
    const { rows } = await sql<{ cancelRequested: boolean }>`
      UPDATE ${sql.table(claim.table.table)} SET heartbeat_at = now() WHERE ${claimedBy(claim)}
      RETURNING ${cancelRequested(claim.table)} AS cancel_requested`.execute(this.db);
    return { held: rows.length > 0, cancelRequested: rows[0]?.cancelRequested === true };
  }

  /** Looks at the claim without refreshing its heartbeat. */
  async state(claim: Claim): Promise<ClaimState> {
    const { rows } = await sql<{ cancelRequested: boolean }>`
      SELECT ${cancelRequested(claim.table)} AS cancel_requested FROM ${sql.table(claim.table.table)} WHERE ${claimedBy(claim)}`.execute(
      this.db,
    );
    return { held: rows.length > 0, cancelRequested: rows[0]?.cancelRequested === true };
  }

  /**
   * Hands the claim back without finishing the job (no heartbeat), so the next worker takes it over at once.
   * `planned` (a drain, a slice's end): the claim is not an interruption, so it does not count towards giving the job
   * up: counted in `handBacks` where the table has one, else its claim number is given back (only where a fresh
   * `claim_token` fences the writes, so a number coming round again fences nothing).
   */
  async release(claim: Claim, planned = false, executor: DbExecutor = this.db): Promise<void> {
    const spec = claim.table;
    const clearToken = spec.fencedBy === 'claimToken' ? sql`, claim_token = NULL` : sql``;
    const notCounted = !planned
      ? sql``
      : spec.handBacks
        ? sql`, ${sql.ref(spec.handBacks)} = ${sql.ref(spec.handBacks)} + 1`
        : spec.fencedBy === 'claimToken'
          ? sql`, attempts = greatest(attempts - 1, 0)`
          : sql``;
    await sql`UPDATE ${sql.table(spec.table)} SET heartbeat_at = NULL${clearToken}${notCounted} WHERE ${claimedBy(claim)}`.execute(
      executor,
    );
  }

  /** Rows the recovery sweep looks at, oldest first. */
  async stale(spec: ClaimableTable, staleAfterMs: number, limit = 100): Promise<StaleJob[]> {
    const secs = staleAfterMs / 1000;
    const attempts = spec.handBacks ? sql`attempts - ${sql.ref(spec.handBacks)}` : sql`attempts`;
    const { rows } = await sql<StaleJob>`
      SELECT id, status, ${attempts} AS attempts FROM ${sql.table(spec.table)}
      WHERE (status = 'running' AND ${staleHeartbeat(staleAfterMs)}) OR (status = 'queued' AND created_at < now() - make_interval(secs => ${secs}))
      ORDER BY created_at LIMIT ${limit}`.execute(this.db);
    return rows;
  }
}

/**
 * The fence: the row is still `running` under this claim. Every write of a claim holder carries it, so a worker
 * that lost its claim (declared dead and taken over, cancelled, finished elsewhere) can write nothing more.
 */
export function claimedBy(claim: Claim): RawBuilder<boolean> {
  return sql<boolean>`(id = ${claim.id} AND status = 'running' AND ${sql.ref(claim.table.fencedBy)} = ${claim.token})`;
}

function cancelRequested(spec: ClaimableTable): RawBuilder<boolean> {
  return spec.cancelFlag ? sql<boolean>`${sql.ref(spec.cancelFlag)}` : sql<boolean>`false`;
}
