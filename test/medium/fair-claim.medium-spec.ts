import { sql, type RawBuilder } from 'kysely';
import { AGENT_RUNS_TABLE } from '../../src/modules/agent/agent-runs.repository.js';
import { INDEXING_JOBS_TABLE } from '../../src/modules/rag/indexing-job.runner.js';
import {
  ClaimableJobsRepository,
  type ClaimableTable,
  type ClaimableTableName,
} from '../../src/queue/claimable-jobs.repository.js';
import { useMediumContext, type ProjectRow, type UserRow } from '../support/medium.js';

/** One node of PostgreSQL's `EXPLAIN (ANALYZE, FORMAT JSON)` tree. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

function* nodesOf(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

const BACKLOG = 5_000;
const STALE_AFTER_MS = 60_000;

/**
 * The fair claim on a real database behind one user's long backlog: the small user's job is claimed first, and the
 * claim's plan reads a few index entries, not the backlog (rows read by every scan, counted from EXPLAIN ANALYZE, not
 * timed), so a claim costs the same behind five jobs or five thousand. Both job tables share the statement.
 */
describe('ClaimableJobsRepository.claimNext behind a long backlog (medium: real database)', () => {
  const medium = useMediumContext();
  const jobs = () => medium().get(ClaimableJobsRepository);

  /** Queued (or other) jobs of one user, inserted in one statement; `ageMinutes` places the first in the past, one ms apart. */
  async function insertJobs(
    spec: ClaimableTable,
    user: UserRow,
    project: ProjectRow,
    count: number,
    fields: { status: string; ageMinutes: number; claimed?: boolean; live?: boolean },
  ): Promise<void> {
    const when = sql`now() - make_interval(mins => ${fields.ageMinutes}) + g * interval '1 millisecond'`;
    const claimedAt = fields.claimed ? when : sql`NULL`;
    const heartbeat = fields.live ? sql`now()` : sql`NULL`;
    const status = sql.lit(fields.status);
    const insert: RawBuilder<unknown> =
      spec.table === 'agentRuns'
        ? sql`INSERT INTO agent_runs (id, user_id, project_id, status, input, provider, model, actor, max_steps, created_at, claimed_at, heartbeat_at)
            SELECT gen_random_uuid(), ${user.id}, ${project.id}, ${status}, 'bulk', 'openai', 'fake-model-1',
              ${JSON.stringify({ userId: user.id, projectIds: null, repos: null })}::jsonb, 5, ${when}, ${claimedAt}, ${heartbeat}
            FROM generate_series(1, ${count}) g`
        : sql`INSERT INTO indexing_jobs (id, project_id, created_by, kind, status, document_ids, created_at, claimed_at, heartbeat_at)
            SELECT gen_random_uuid(), ${project.id}, ${user.id}, 'ingest', ${status}, '{}', ${when}, ${claimedAt}, ${heartbeat}
            FROM generate_series(1, ${count}) g`;
    await insert.execute(medium().db);
  }

  /** Runs the claim under EXPLAIN ANALYZE in a transaction that is rolled back, and returns its plan. */
  async function planOfClaim(spec: ClaimableTable<ClaimableTableName>): Promise<PlanNode> {
    let plan: PlanNode | undefined;
    const rollback = new Error('rolled back on purpose');
    await medium()
      .db.transaction()
      .execute(async (trx) => {
        const statement = jobs().claimNextStatement(spec, STALE_AFTER_MS, '00000000-0000-4000-8000-000000000001');
        const { rows } = await sql<{ 'QUERY PLAN': unknown }>`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`.execute(trx);
        const raw = rows[0]!['QUERY PLAN'];
        plan = (typeof raw === 'string' ? JSON.parse(raw) : raw)[0].Plan as PlanNode;
        throw rollback;
      })
      .catch((error: unknown) => {
        if (error !== rollback) throw error;
      });
    return plan!;
  }

  it.each([
    ['indexing jobs', INDEXING_JOBS_TABLE],
    ['agent runs', AGENT_RUNS_TABLE],
  ] as const)(
    '%s: with 5,000 queued for one user, another user’s one job is claimed first and the claim reads no backlog',
    async (_kind, spec) => {
      const { make, db } = medium();
      const bulk = await make.user();
      const small = await make.user();
      const bulkProject = await make.project(bulk);
      const smallProject = await make.project(small);
      // The bulk user was served a minute ago and has one job running; the backlog is older than the small user's job.
      await insertJobs(spec, bulk, bulkProject, 50, { status: 'succeeded', ageMinutes: 90, claimed: true });
      await insertJobs(spec, bulk, bulkProject, 1, { status: 'running', ageMinutes: 1, claimed: true, live: true });
      await insertJobs(spec, bulk, bulkProject, BACKLOG, { status: 'queued', ageMinutes: 30 });
      await insertJobs(spec, small, smallProject, 1, { status: 'queued', ageMinutes: 0 });
      await sql`ANALYZE ${sql.table(spec.table)}`.execute(db); // what autovacuum does after a bulk insert

      const plan = await planOfClaim(spec);
      const scans = [...nodesOf(plan)].filter((node) => node['Node Type'].includes('Scan'));
      expect(scans.filter((node) => node['Node Type'] === 'Seq Scan').map((node) => node['Relation Name'])).toEqual([]);
      const rowsRead = scans.reduce(
        (sum, node) => sum + (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'],
        0,
      );
      expect(rowsRead).toBeLessThan(200);

      const first = await jobs().claimNext(spec, STALE_AFTER_MS, '00000000-0000-4000-8000-000000000002');
      const owner = (row: unknown) => (row as Record<string, string>)[spec.owner];
      expect(owner(first?.row)).toBe(small.id);
      // Then the backlog, oldest first.
      const second = await jobs().claimNext(spec, STALE_AFTER_MS, '00000000-0000-4000-8000-000000000003');
      expect(owner(second?.row)).toBe(bulk.id);
      const { rows } = await sql<{ oldest: Date }>`
        SELECT min(created_at) AS oldest FROM ${sql.table(spec.table)} WHERE ${sql.ref(spec.owner)} = ${bulk.id} AND status = 'queued'`.execute(
        db,
      );
      expect(new Date((second!.row as { createdAt: Date }).createdAt).getTime()).toBeLessThan(
        new Date(rows[0]!.oldest).getTime(),
      );
    },
    120_000,
  );
});
