import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import { AgentRunsService } from '../../src/modules/agent/agent-runs.service.js';
import { AgentWebhooksService } from '../../src/modules/agent/webhooks/agent-webhooks.service.js';
import { actorOf, useMediumContext, type ProjectRow, type UserRow } from '../support/medium.js';

/**
 * Reading a run's webhook: its status shows the URL and the delivery log (attempts, last answer), never the
 * secret, and only to the run's starter. Sending and signing deliveries is agent-webhooks.e2e-spec.ts's.
 */
describe('agent run webhooks, read side (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  let owner: UserRow;
  let stranger: UserRow;
  let project: ProjectRow;
  let runId: string;
  const secret = `whsec_${randomUUID()}`;

  beforeAll(async () => {
    const { make, get, db } = medium();
    [owner, stranger] = [await make.user(), await make.user()];
    project = await make.project(owner);
    runId = randomUUID();
    await db
      .insertInto('agentRuns')
      .values({
        id: runId,
        userId: owner.id,
        projectId: project.id,
        input: 'notify me',
        provider: 'openai',
        model: 'fake-model-1',
        status: 'queued',
        actor: sql`${JSON.stringify({ userId: owner.id, projectIds: null, repos: null })}::jsonb`,
        maxSteps: 3,
        webhookUrl: 'https://hooks.example.com/atrium',
        webhookSecret: get(AgentWebhooksService).sealSecret(secret, runId),
      })
      .execute();
  });

  it('status shows the webhook URL and each delivery with its attempts and last answer, oldest first; never the secret', async () => {
    const { db, get } = medium();
    const first = new Date(Date.UTC(2026, 3, 1, 10));
    const second = new Date(Date.UTC(2026, 3, 1, 11));
    const [failed] = await db
      .insertInto('agentRunWebhookDeliveries')
      .values({
        runId,
        type: 'run.started',
        status: 'failed',
        attempts: 5,
        lastStatusCode: 500,
        lastError: 'HTTP 500',
        occurredAt: first,
      })
      .returning('id')
      .execute();
    const [delivered] = await db
      .insertInto('agentRunWebhookDeliveries')
      .values({
        runId,
        type: 'run.succeeded',
        status: 'delivered',
        attempts: 1,
        lastStatusCode: 204,
        occurredAt: second,
        deliveredAt: second,
      })
      .returning('id')
      .execute();
    const view = await get(AgentRunsService).get(actorOf(owner), runId);
    expect(view.webhook?.url).toBe('https://hooks.example.com/atrium');
    const mine = (view.webhook?.deliveries ?? []).filter((d) => [failed.id, delivered.id].includes(d.deliveryId));
    expect(mine).toEqual([
      {
        deliveryId: failed.id,
        type: 'run.started',
        status: 'failed',
        attempts: 5,
        lastStatusCode: 500,
        lastError: 'HTTP 500',
        occurredAt: first.toISOString(),
        deliveredAt: null,
      },
      {
        deliveryId: delivered.id,
        type: 'run.succeeded',
        status: 'delivered',
        attempts: 1,
        lastStatusCode: 204,
        lastError: null,
        occurredAt: second.toISOString(),
        deliveredAt: second.toISOString(),
      },
    ]);
    expect(JSON.stringify(view)).not.toContain(secret);
    expect(JSON.stringify(view)).not.toContain('webhook_secret');
  });

  it('another user finds no run, so no webhook either', async () => {
    await expect(medium().get(AgentRunsService).get(actorOf(stranger), runId)).rejects.toMatchObject({
      code: ErrorCode.NotFound,
    });
  });

  it('the stored secret is sealed: not the secret in the row, and bound to its run', async () => {
    const { db, get } = medium();
    const row = await db
      .selectFrom('agentRuns')
      .select('webhookSecret')
      .where('id', '=', runId)
      .executeTakeFirstOrThrow();
    expect(row.webhookSecret).not.toContain(secret);
    expect(get(AgentWebhooksService).sealSecret(secret, randomUUID())).not.toBe(row.webhookSecret);
  });
});
