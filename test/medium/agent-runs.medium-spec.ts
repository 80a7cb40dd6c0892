import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import type { StepDecider } from '../../src/modules/agent/agent-run.types.js';
import { AgentRunsService } from '../../src/modules/agent/agent-runs.service.js';
import { actorOf, useMediumContext, type ProjectRow, type UserRow } from '../support/medium.js';

/**
 * Who sees an agent run, its history and its cancellation, through AgentRunsService on a real database: a run is
 * its starter's only (inside the starter's pins), history pages newest first with filters, and cancelling a
 * finished run is a conflict. Runs are inserted as the service stores them; running one (the model, the tools) is
 * agent.e2e-spec.ts's.
 */
describe('AgentRunsService (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const runs = () => medium().get(AgentRunsService);
  const notFound = { code: ErrorCode.NotFound };
  const decider = (user: UserRow): StepDecider => ({ userId: user.id, via: 'user_token', credentialId: null });

  /** A run row as AgentRunsRepository writes one, at a given time and status. */
  async function run(
    user: UserRow,
    project: ProjectRow,
    fields: { at: Date; status: string; input?: string; output?: string },
  ): Promise<string> {
    const id = randomUUID();
    await medium()
      .db.insertInto('agentRuns')
      .values({
        id,
        userId: user.id,
        projectId: project.id,
        input: fields.input ?? 'do it',
        output: fields.output ?? null,
        provider: 'openai',
        model: 'fake-model-1',
        status: fields.status,
        actor: sql`${JSON.stringify({ userId: user.id, projectIds: null, repos: null })}::jsonb`,
        maxSteps: 5,
        createdAt: fields.at,
        finishedAt: ['succeeded', 'failed', 'cancelled'].includes(fields.status) ? fields.at : null,
      })
      .execute();
    return id;
  }

  let owner: UserRow;
  let viewer: UserRow;
  let stranger: UserRow;
  let project: ProjectRow;
  let first: string;
  let second: string;
  let failed: string;

  beforeAll(async () => {
    const { make } = medium();
    [owner, viewer, stranger] = [await make.user(), await make.user(), await make.user()];
    project = await make.project(owner, { members: [{ user: viewer, role: 'viewer' }] });
    const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 12, minute));
    first = await run(owner, project, { at: at(1), status: 'succeeded', input: 'first', output: 'one' });
    failed = await run(owner, project, { at: at(2), status: 'failed', input: 'broken' });
    second = await run(owner, project, { at: at(3), status: 'succeeded', input: 'second', output: 'two' });
  });

  it("status: the run's starter sees it; other users, members included, and unknown or malformed ids are not_found", async () => {
    expect(await runs().get(actorOf(owner), second)).toMatchObject({
      jobId: second,
      status: 'succeeded',
      output: 'two',
      projectId: project.id,
    });
    for (const [who, id] of [
      [stranger, first],
      [viewer, first],
      [stranger, randomUUID()],
      [owner, 'nope'],
      [owner, "' OR 1=1"],
    ] as const) {
      await expect(runs().get(actorOf(who), id)).rejects.toMatchObject(notFound);
    }
    // The starter's own key pinned to another project does not see it either.
    await expect(runs().get(actorOf(owner, { projectIds: [randomUUID()] }), first)).rejects.toMatchObject(notFound);
  });

  it("history: the starter's runs newest first in pages, filtered by status; nobody else's", async () => {
    expect(await runs().history(actorOf(stranger), { limit: 50 })).toEqual({ items: [], nextCursor: null });
    expect((await runs().history(actorOf(viewer), { limit: 50 })).items).toEqual([]);
    const page1 = await runs().history(actorOf(owner), { limit: 1 });
    expect(page1.items.map((item) => item.jobId)).toEqual([second]);
    expect(page1.items[0]).toMatchObject({
      status: 'succeeded',
      output: 'two',
      projectId: project.id,
      input: 'second',
    });
    const page2 = await runs().history(actorOf(owner), { limit: 2, cursor: page1.nextCursor ?? undefined });
    expect(page2.items.map((item) => item.jobId)).toEqual([failed, first]);
    expect(page2.nextCursor).toBeNull();
    const onlyFailed = await runs().history(actorOf(owner), { status: 'failed', projectId: project.id, limit: 50 });
    expect(onlyFailed.items.map((item) => item.jobId)).toEqual([failed]);
    await expect(runs().history(actorOf(owner), { limit: 1, cursor: 'garbage' })).rejects.toMatchObject({
      code: ErrorCode.ValidationFailed,
    });
  });

  it('cancel: not_found for anyone but the starter; a finished run is a state conflict; a queued one ends cancelled at once', async () => {
    await expect(runs().cancel(actorOf(stranger), decider(stranger), first)).rejects.toMatchObject(notFound);
    await expect(runs().cancel(actorOf(owner), decider(owner), 'nope')).rejects.toMatchObject(notFound);
    await expect(runs().cancel(actorOf(owner), decider(owner), first)).rejects.toMatchObject({
      code: ErrorCode.StateConflict,
      details: { status: 'succeeded' },
    });
    const queued = await run(owner, project, { at: new Date(), status: 'queued' });
    expect(await runs().cancel(actorOf(owner), decider(owner), queued)).toEqual({ jobId: queued, status: 'cancelled' });
    expect((await runs().get(actorOf(owner), queued)).status).toBe('cancelled');
  });
});
