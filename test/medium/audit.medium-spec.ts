import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { uuidV7 } from '../../src/modules/audit/audit-entry.js';
import { AuditRetentionService } from '../../src/modules/audit/audit-retention.service.js';
import { AuditService } from '../../src/modules/audit/audit.service.js';
import { actorOf, useMediumContext, type UserRow } from '../support/medium.js';

/**
 * The audit log on a real database: reading it (filters, a user's own entries, pages), the table's refusal of any
 * change but retention's, and retention by age. Which actions write which entries, and the routes' shapes, are
 * audit.e2e-spec.ts's.
 */
describe('audit log (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const audit = () => medium().get(AuditService);
  const count = async () =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM audit_log`.execute(medium().db)).rows[0].n);

  /** An entry as the recorder writes one, at a given time. */
  async function entry(
    user: UserRow,
    fields: { at: Date; action?: string; credentialId?: string; via?: string },
  ): Promise<string> {
    const id = uuidV7(fields.at);
    await medium()
      .db.insertInto('auditLog')
      .values({
        id,
        createdAt: fields.at,
        action: fields.action ?? 'tool.call',
        userId: user.id,
        credentialId: fields.credentialId ?? null,
        via: fields.via ?? 'api_key',
        outcomeStatus: 'ok',
      })
      .execute();
    return id;
  }

  let alice: UserRow;
  let bob: UserRow;
  const aliceKey = randomUUID();
  const made: Record<string, string> = {};

  beforeAll(async () => {
    const { make } = medium();
    [alice, bob] = [await make.user(), await make.user()];
    const day = (n: number) => new Date(Date.UTC(2026, 1, n));
    made.aliceOld = await entry(alice, { at: day(1), action: 'project.create', via: 'user_token' });
    made.aliceKey1 = await entry(alice, { at: day(2), credentialId: aliceKey });
    made.bob = await entry(bob, { at: day(3) });
    made.aliceKey2 = await entry(alice, { at: day(4), credentialId: aliceKey });
  });

  it('filters by user, credential, action and time, newest first; a user sees only their own entries', async () => {
    const ids = async (filter: Parameters<AuditService['page']>[0]) =>
      (await audit().page(filter, { limit: 200 })).items
        .map((e) => e.id)
        .filter((id) => Object.values(made).includes(id));
    expect(await ids({ userId: alice.id })).toEqual([made.aliceKey2, made.aliceKey1, made.aliceOld]);
    expect(await ids({ credentialId: aliceKey })).toEqual([made.aliceKey2, made.aliceKey1]);
    expect(await ids({ userId: alice.id, action: 'project.create' })).toEqual([made.aliceOld]);
    expect(await ids({ from: new Date(Date.UTC(2026, 1, 2)), to: new Date(Date.UTC(2026, 1, 3, 12)) })).toEqual([
      made.bob,
      made.aliceKey1,
    ]);
    expect(await ids({ visibleTo: actorOf(bob) })).toEqual([made.bob]);
    expect(await ids({ visibleTo: actorOf(bob), userId: alice.id })).toEqual([]);
  });

  it("pages through a user's entries with the cursor, and exports the same entries", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await audit().page({ userId: alice.id }, { limit: 1, cursor });
      seen.push(...page.items.map((e) => e.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor && seen.length < 10);
    expect(seen).toEqual([made.aliceKey2, made.aliceKey1, made.aliceOld]);
    const exported: string[] = [];
    for await (const e of audit().export({ userId: alice.id })) exported.push(e.id);
    expect(exported).toEqual(seen);
    const [view] = (await audit().page({ credentialId: aliceKey }, { limit: 1 })).items;
    expect(view).toMatchObject({
      id: made.aliceKey2,
      action: 'tool.call',
      actor: { userId: alice.id, via: 'api_key', credentialId: aliceKey },
      outcome: { status: 'ok' },
    });
  });

  it('the database refuses UPDATE, DELETE and TRUNCATE of entries', async () => {
    const { db } = medium();
    const before = await count();
    expect(before).toBeGreaterThan(0);
    await expect(sql`UPDATE audit_log SET action = 'tool.call'`.execute(db)).rejects.toThrow(/append-only/);
    await expect(sql`DELETE FROM audit_log`.execute(db)).rejects.toThrow(/append-only/);
    await expect(sql`TRUNCATE audit_log`.execute(db)).rejects.toThrow(/append-only/);
    // A cutoff closer than a day does not open the door either.
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`SELECT set_config('atrium.audit_prune_before', ${new Date().toISOString()}, true)`.execute(trx);
        await sql`DELETE FROM audit_log`.execute(trx);
      }),
    ).rejects.toThrow(/append-only/);
    expect(await count()).toBe(before);
  });

  it('retention prunes only entries older than AUDIT_RETENTION_DAYS', async () => {
    const { config, get } = medium();
    expect(config.audit.retentionDays).toBe(365);
    const now = new Date();
    const old = await entry(alice, { at: new Date(now.getTime() - 400 * 86_400_000) });
    const edge = await entry(alice, { at: new Date(now.getTime() - 364 * 86_400_000) });
    const before = await count();
    expect(await get(AuditRetentionService).prune(now)).toBe(1);
    const left = await medium().db.selectFrom('auditLog').select('id').where('id', 'in', [old, edge]).execute();
    expect(left.map((row) => row.id)).toEqual([edge]);
    expect(await count()).toBe(before - 1);
  });
});
