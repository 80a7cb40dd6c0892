import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { createHash, randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { viewerStatScopes, visibleDocument } from '../../src/common/access/access-rules.js';
import type { Actor } from '../../src/common/auth/actor.js';
import { buildDataSourceOptions } from '../../src/database/data-source-options.js';
import type { DB } from '../../src/database/database.types.js';
import { runMigrationsUnderLock } from '../../src/database/migrations-runner.js';
import { createTestDatabase, type TestDatabase } from '../support/test-app.js';

/**
 * The BM25 statistic scopes a caller's search sums (viewerStatScopes) against the document visibility rule
 * (visibleDocument), on a real database with the real scope triggers, for every caller kind: nothing the
 * caller may not see is ever counted in its statistics, and everything it may see is, but for the one documented
 * exception (a public document of a project its author has left: visible to the author, counted for members only).
 */
describe('RAG statistic scopes agree with document visibility (medium)', () => {
  let database: TestDatabase;
  let dataSource: DataSource;
  let db: Kysely<DB>;
  const users = { a: randomUUID(), b: randomUUID() };
  const projects = { p1: randomUUID(), p2: randomUUID(), p3: randomUUID() };
  /** project → members. A left p3 after writing in it; p2 was never A's. */
  const members: Record<string, string[]> = { [projects.p1]: [users.a, users.b], [projects.p2]: [users.b], [projects.p3]: [users.b] };
  const documents: { id: string; authorId: string; projectId: string | null; isPublic: boolean }[] = [];

  beforeAll(async () => {
    Logger.overrideLogger(['error', 'warn']);
    database = await createTestDatabase();
    dataSource = await new DataSource(buildDataSourceOptions(database.url, 2)).initialize();
    await runMigrationsUnderLock(dataSource, database.url);
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: (dataSource.driver as unknown as { master: Pool }).master }) });

    await db
      .insertInto('users')
      .values(Object.values(users).map((id) => ({ id, email: `${id}@example.com`, name: id.slice(0, 8), password_hash: 'x' })))
      .execute();
    await db
      .insertInto('projects')
      .values(Object.values(projects).map((id) => ({ id, name: id.slice(0, 8), owner_id: users.b })))
      .execute();
    await db
      .insertInto('project_members')
      .values(Object.entries(members).flatMap(([projectId, userIds]) => userIds.map((userId) => ({ project_id: projectId, user_id: userId, role: 'editor' }))))
      .execute();
    // Every author × project (or none) × visibility, one chunk each (the trigger stamps its scope and counts it).
    for (const authorId of Object.values(users)) {
      for (const projectId of [null, ...Object.values(projects)]) {
        for (const isPublic of [false, true]) {
          const id = randomUUID();
          documents.push({ id, authorId, projectId, isPublic });
          await db
            .insertInto('documents')
            .values({
              id,
              author_id: authorId,
              project_id: projectId,
              is_public: isPublic,
              title: 't',
              mime_type: 'text/markdown',
              size_bytes: 1,
              sha256: createHash('sha256').update(id).digest('hex'),
              origin: 'text',
              content: Buffer.from('x'),
            })
            .execute();
          await sql`INSERT INTO document_chunks (id, document_id, chunk_index, text, start_offset, end_offset, content_sha256, embedding_model, embedding_dims, tsv, token_count)
                    VALUES (${randomUUID()}, ${id}, 0, 'x', 0, 1, 'x', 'm', 8, to_tsvector('english', 'word'), 1)`.execute(db);
        }
      }
    }
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await database?.drop();
  });

  const callerKinds: [string, Actor][] = [
    ['a user (session or unpinned key)', { userId: users.a, projectIds: null, repos: null }],
    ['a key pinned to one of its projects', { userId: users.a, projectIds: [projects.p1], repos: null }],
    ['a key pinned to projects it is not (or no longer) a member of', { userId: users.a, projectIds: [projects.p2, projects.p3], repos: null }],
    ['a key pinned to its project and another', { userId: users.a, projectIds: [projects.p1, projects.p2], repos: null }],
    ['a project session token', { userId: users.a, projectIds: [projects.p1], repos: null, projectRoleCap: 'viewer' }],
    ['an agent run started by a pinned key', { userId: users.a, projectIds: [projects.p1, projects.p3], repos: null }],
    ['a key pinned to nothing', { userId: users.a, projectIds: [], repos: null }],
    ['another user, unpinned', { userId: users.b, projectIds: null, repos: null }],
    ['another user pinned to a project', { userId: users.b, projectIds: [projects.p2], repos: null }],
  ];

  it.each(callerKinds)('%s: the statistics count exactly the documents it may see', async (_kind, actor) => {
    const visible = new Set(
      (await db.selectFrom('documents as d').select('d.id').where(visibleDocument(actor, 'd')).execute()).map((row) => row.id),
    );
    // Documents whose chunks the caller's statistics count: those in a scope the caller sums (the real table, COLLATE "C").
    const counted = new Set(
      (
        await db
          .selectFrom('document_chunks as c')
          .innerJoin('rag_scope_stats as s', 's.scope', 'c.stat_scope')
          .select('c.document_id')
          .where(viewerStatScopes(actor, 's.scope'))
          .execute()
      ).map((row) => row.document_id),
    );
    // The exception, stated independently: public, authored by the caller, in a project it is not a member of.
    const authorOnly = (document: (typeof documents)[number]) =>
      document.isPublic && document.authorId === actor.userId && document.projectId !== null && !members[document.projectId].includes(actor.userId);

    for (const document of documents) {
      if (counted.has(document.id)) expect({ document, visible: visible.has(document.id) }).toEqual({ document, visible: true });
      if (visible.has(document.id)) expect({ document, counted: counted.has(document.id) }).toEqual({ document, counted: !authorOnly(document) });
    }
    // The fixture covers the rule: A unpinned sees documents counted and the exception (its public documents in p2 and p3).
    if (actor.projectIds === null && actor.userId === users.a) {
      expect(visible.size).toBeGreaterThan(counted.size);
      expect(counted.size).toBeGreaterThan(0);
    }
  });

  it('the statistics of a scope follow a document that changes visibility', async () => {
    const actor: Actor = { userId: users.b, projectIds: null, repos: null };
    const privateOfA = documents.find((d) => d.authorId === users.a && d.projectId === projects.p1 && !d.isPublic)!;
    const chunksOfB = async () =>
      Number(
        (
          await db
            .selectFrom('rag_scope_stats as s')
            .select(sql<string>`coalesce(sum(s.chunk_count), 0)`.as('n'))
            .where(viewerStatScopes(actor, 's.scope'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await chunksOfB();
    await db.updateTable('documents').set({ is_public: true }).where('id', '=', privateOfA.id).execute();
    expect(await chunksOfB()).toBe(before + 1);
    await db.updateTable('documents').set({ is_public: false }).where('id', '=', privateOfA.id).execute();
    expect(await chunksOfB()).toBe(before);
  });
});
