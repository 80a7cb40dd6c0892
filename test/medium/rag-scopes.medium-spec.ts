import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { PostgresDialect, sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { viewerStatScopes, visibleDocument } from '../../src/common/access/access-rules.js';
import type { Actor } from '../../src/common/auth/actor.js';
import { DatabasePool } from '../../src/database/database-pool.js';
import { EmbeddedEngine } from '../../src/database/embedded-engine.js';
import { newDb, type Db } from '../../src/database/kysely.provider.js';
import { migrateIfPending } from '../../src/database/migrations-runner.js';
import { NamedStatements } from '../../src/database/named-statements.js';
import { DocumentChunksRepository } from '../../src/modules/rag/document-chunks.repository.js';
import { toVectorBatch, toVectorParam } from '../../src/modules/rag/embeddings/embedding-provider.js';
import { RagSearchRepository, type SearchScope } from '../../src/modules/rag/rag-search.repository.js';
import { insertTextDocument } from '../support/factories.js';
import { createTestDatabase, type TestDatabase } from '../support/test-app.js';

/**
 * The BM25 statistic scopes a caller's search sums (viewerStatScopes) against the document visibility rule
 * (visibleDocument), on a real database with the real scope triggers, for every caller kind: nothing the
 * caller may not see is ever counted in its statistics, and everything it may see is, but for the one documented
 * exception (a public document of a project its author has left: visible to the author, counted for members only).
 * Keyword search, which filters postings by the statistic scope they carry (plus that exception), finds exactly
 * the chunks of the documents the caller may see, written by the real chunk writer.
 */
describe('RAG statistic scopes agree with document visibility (medium)', () => {
  let database: TestDatabase;
  let databasePool: DatabasePool;
  let db: Db;
  const users = { a: randomUUID(), b: randomUUID() };
  const projects = { p1: randomUUID(), p2: randomUUID(), p3: randomUUID() };
  /** project → members. A left p3 after writing in it; p2 was never A's. */
  const members: Record<string, string[]> = {
    [projects.p1]: [users.a, users.b],
    [projects.p2]: [users.b],
    [projects.p3]: [users.b],
  };
  const documents: { id: string; authorId: string; projectId: string | null; isPublic: boolean }[] = [];
  /** chunk id → document id */
  const documentOfChunk = new Map<string, string>();
  let search: RagSearchRepository;

  /** A document with one chunk of the word "word", written by the real chunk writer (postings and their scope). */
  const addDocument = async (authorId: string, projectId: string | null, isPublic: boolean): Promise<void> => {
    const { id } = await insertTextDocument(db, { authorId, projectId, isPublic, title: 't', text: 'x' });
    documents.push({ id, authorId, projectId, isPublic });
    const chunkId = randomUUID();
    documentOfChunk.set(chunkId, id);
    await new DocumentChunksRepository(db).insertBatch(
      { documentId: id, sha256: 'x', embeddingModel: 'm', embeddingDims: 2 },
      [{ id: chunkId, index: 0, text: 'word', start: 0, end: 4, indexText: 'word' }],
      toVectorBatch([[1, 0]], 2),
      db,
    );
  };

  beforeAll(async () => {
    Logger.overrideLogger(['error', 'warn']);
    database = await createTestDatabase();
    await migrateIfPending(database.url);
    databasePool = new DatabasePool(database.url, 2);
    db = newDb(new PostgresDialect({ pool: databasePool.pool }));

    await db
      .insertInto('users')
      .values(
        Object.values(users).map((id) => ({
          id,
          email: `${id}@example.com`,
          name: id.slice(0, 8),
          passwordHash: 'x',
        })),
      )
      .execute();
    await db
      .insertInto('projects')
      .values(Object.values(projects).map((id) => ({ id, name: id.slice(0, 8), ownerId: users.b })))
      .execute();
    await db
      .insertInto('projectMembers')
      .values(
        Object.entries(members).flatMap(([projectId, userIds]) =>
          userIds.map((userId) => ({ projectId, userId, role: 'editor' })),
        ),
      )
      .execute();
    // Every author × project (or none) × visibility, one chunk each (the trigger stamps its scope and counts it).
    search = new RagSearchRepository(db, new NamedStatements(db, null, new EmbeddedEngine(db)));
    for (const authorId of Object.values(users)) {
      for (const projectId of [null, ...Object.values(projects)]) {
        for (const isPublic of [false, true]) await addDocument(authorId, projectId, isPublic);
      }
    }
  });

  afterAll(async () => {
    await databasePool?.onApplicationShutdown();
    await database?.drop();
  });

  const callerKinds: [string, Actor][] = [
    ['a user (session or unpinned key)', { userId: users.a, projectIds: null, repos: null }],
    ['a key pinned to one of its projects', { userId: users.a, projectIds: [projects.p1], repos: null }],
    [
      'a key pinned to projects it is not (or no longer) a member of',
      { userId: users.a, projectIds: [projects.p2, projects.p3], repos: null },
    ],
    [
      'a key pinned to its project and another',
      { userId: users.a, projectIds: [projects.p1, projects.p2], repos: null },
    ],
    ['a project session token', { userId: users.a, projectIds: [projects.p1], repos: null, projectRoleCap: 'viewer' }],
    ['an agent run started by a pinned key', { userId: users.a, projectIds: [projects.p1, projects.p3], repos: null }],
    ['a key pinned to nothing', { userId: users.a, projectIds: [], repos: null }],
    ['another user, unpinned', { userId: users.b, projectIds: null, repos: null }],
    ['another user pinned to a project', { userId: users.b, projectIds: [projects.p2], repos: null }],
  ];

  it.each(callerKinds)('%s: the statistics count exactly the documents it may see', async (_kind, actor) => {
    const visible = new Set(
      (await db.selectFrom('documents as d').select('d.id').where(visibleDocument(actor, 'd')).execute()).map(
        (row) => row.id,
      ),
    );
    // Documents whose chunks the caller's statistics count: those in a scope the caller sums (the real table, COLLATE "C").
    const counted = new Set(
      (
        await db
          .selectFrom('documentChunks as c')
          .innerJoin('ragScopeStats as s', 's.scope', 'c.statScope')
          .select('c.documentId')
          .where(viewerStatScopes(actor, 's.scope'))
          .execute()
      ).map((row) => row.documentId),
    );
    // The exception, stated independently: public, authored by the caller, in a project it is not a member of.
    const authorOnly = (document: (typeof documents)[number]) =>
      document.isPublic &&
      document.authorId === actor.userId &&
      document.projectId !== null &&
      !members[document.projectId].includes(actor.userId);

    for (const document of documents) {
      if (counted.has(document.id))
        expect({ document, visible: visible.has(document.id) }).toEqual({ document, visible: true });
      if (visible.has(document.id))
        expect({ document, counted: counted.has(document.id) }).toEqual({ document, counted: !authorOnly(document) });
    }
    // The fixture covers the rule: A unpinned sees documents counted and the exception (its public documents in p2 and p3).
    if (actor.projectIds === null && actor.userId === users.a) {
      expect(visible.size).toBeGreaterThan(counted.size);
      expect(counted.size).toBeGreaterThan(0);
    }
  });

  /** Documents whose chunks a keyword search for the fixture's one word finds, in the given search scope. */
  const foundBy = async (scope: SearchScope): Promise<Set<string>> => {
    const ranked = await search.keywordCandidates(scope, 'word', 100, { param: null, dims: 2, model: 'm' }, 0);
    return new Set(ranked.map((chunk) => documentOfChunk.get(chunk.id)!));
  };
  /** The same for the vector ranking (every fixture chunk has the same vector). */
  const vectorFoundBy = async (scope: SearchScope): Promise<Set<string>> => {
    const ranked = await search.vectorCandidates(
      db,
      scope,
      'word',
      { param: toVectorParam([1, 0]), dims: 2, model: 'm' },
      100,
      0,
    );
    return new Set(ranked.map((chunk) => documentOfChunk.get(chunk.id)!));
  };
  const visibleTo = async (actor: Actor): Promise<Set<string>> =>
    new Set(
      (await db.selectFrom('documents as d').select('d.id').where(visibleDocument(actor, 'd')).execute()).map(
        (row) => row.id,
      ),
    );

  it.each(callerKinds)(
    '%s: keyword search and the vector ranking find exactly the documents it may see',
    async (_kind, actor) => {
      const visible = await visibleTo(actor);
      const expected = (keep: (document: (typeof documents)[number]) => boolean) =>
        documents
          .filter((document) => visible.has(document.id) && keep(document))
          .map((document) => document.id)
          .sort();
      // Narrowed to some documents: every other fixture document, visible or not.
      const some = documents.filter((_, index) => index % 2 === 0).map((document) => document.id);
      const cases: [Omit<SearchScope, 'actor'>, string[]][] = [
        [{ projectId: null, documentIds: null }, expected(() => true)],
        ...Object.values(projects).map((projectId): [Omit<SearchScope, 'actor'>, string[]] => [
          { projectId, documentIds: null },
          expected((document) => document.projectId === projectId),
        ]),
        [{ projectId: null, documentIds: some }, expected((document) => some.includes(document.id))],
        [
          { projectId: projects.p3, documentIds: some },
          expected((document) => some.includes(document.id) && document.projectId === projects.p3),
        ],
      ];
      for (const [narrowing, wanted] of cases) {
        const scope = { actor, ...narrowing };
        expect({ narrowing, keyword: [...(await foundBy(scope))].sort() }).toEqual({ narrowing, keyword: wanted });
        expect({ narrowing, vector: [...(await vectorFoundBy(scope))].sort() }).toEqual({ narrowing, vector: wanted });
      }
    },
  );

  it('every posting carries the statistic scope of its chunk, also after a document changes visibility', async () => {
    const mismatched = () =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM rag_postings p JOIN document_chunks c ON c.id = p.chunk_id
                         JOIN rag_scopes s ON s.id = p.scope_id WHERE s.scope <> c.stat_scope`.execute(db);
    const postings = await sql<{ n: number }>`SELECT count(*)::int AS n FROM rag_postings`.execute(db);
    expect(postings.rows[0].n).toBe(documents.length);
    expect((await mismatched()).rows[0].n).toBe(0);

    // B's private document in p2 goes public, then to no project: A (not in p2) finds it only while it is not private to B.
    const moved = documents.find((d) => d.authorId === users.b && d.projectId === projects.p2 && !d.isPublic)!;
    const outsider: Actor = { userId: users.a, projectIds: null, repos: null };
    try {
      await db.updateTable('documents').set({ isPublic: true, projectId: null }).where('id', '=', moved.id).execute();
      expect((await mismatched()).rows[0].n).toBe(0);
      expect((await foundBy({ actor: outsider, projectId: null, documentIds: null })).has(moved.id)).toBe(true);
      await db.updateTable('documents').set({ isPublic: false }).where('id', '=', moved.id).execute();
      expect((await mismatched()).rows[0].n).toBe(0);
      expect((await foundBy({ actor: outsider, projectId: null, documentIds: null })).has(moved.id)).toBe(false);
    } finally {
      await db
        .updateTable('documents')
        .set({ isPublic: false, projectId: projects.p2 })
        .where('id', '=', moved.id)
        .execute();
    }
    expect((await mismatched()).rows[0].n).toBe(0);
  });

  it('a caller with more scopes than are compared one by one finds exactly what it may see', async () => {
    // 40 projects of a third user, each with its public document: above POSTING_SCOPES_SCANNED, the postings'
    // scopes are looked up in a hash. Documents added here are pushed to the fixture, so later expectations see them.
    const c = randomUUID();
    await db
      .insertInto('users')
      .values({ id: c, email: `${c}@example.com`, name: 'c', passwordHash: 'x' })
      .execute();
    for (let index = 0; index < 40; index++) {
      const projectId = randomUUID();
      await db
        .insertInto('projects')
        .values({ id: projectId, name: `c${index}`, ownerId: c })
        .execute();
      await db.insertInto('projectMembers').values({ projectId, userId: c, role: 'owner' }).execute();
      members[projectId] = [c];
      await addDocument(c, projectId, true);
    }
    for (const actor of [
      { userId: c, projectIds: null, repos: null },
      { userId: users.b, projectIds: null, repos: null },
    ] satisfies Actor[]) {
      const visible = [...(await visibleTo(actor))].sort();
      const scopes = await db
        .selectFrom('ragScopeStats as s')
        .select('s.scope')
        .where(viewerStatScopes(actor, 's.scope'))
        .execute();
      if (actor.userId === c) expect(scopes.length).toBeGreaterThan(32);
      expect([...(await foundBy({ actor, projectId: null, documentIds: null }))].sort()).toEqual(visible);
      expect([...(await vectorFoundBy({ actor, projectId: null, documentIds: null }))].sort()).toEqual(visible);
    }
  });

  it('the statistics of a scope follow a document that changes visibility', async () => {
    const actor: Actor = { userId: users.b, projectIds: null, repos: null };
    const privateOfA = documents.find((d) => d.authorId === users.a && d.projectId === projects.p1 && !d.isPublic)!;
    const chunksOfB = async () =>
      Number(
        (
          await db
            .selectFrom('ragScopeStats as s')
            .select(sql<string>`coalesce(sum(s.chunk_count), 0)`.as('n'))
            .where(viewerStatScopes(actor, 's.scope'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await chunksOfB();
    await db.updateTable('documents').set({ isPublic: true }).where('id', '=', privateOfA.id).execute();
    expect(await chunksOfB()).toBe(before + 1);
    await db.updateTable('documents').set({ isPublic: false }).where('id', '=', privateOfA.id).execute();
    expect(await chunksOfB()).toBe(before);
  });

  it('postings and statistics leave with their chunks, whether a document or its chunks are deleted', async () => {
    const counts = async () =>
      (
        await sql<{ chunks: number; postings: number; orphans: number; counted: number; df: number }>`
          SELECT (SELECT count(*)::int FROM document_chunks) AS chunks,
                 (SELECT count(*)::int FROM rag_postings) AS postings,
                 (SELECT count(*)::int FROM rag_postings p WHERE NOT EXISTS (SELECT 1 FROM document_chunks c WHERE c.id = p.chunk_id)) AS orphans,
                 (SELECT coalesce(sum(chunk_count), 0)::int FROM rag_scope_stats) AS counted,
                 (SELECT coalesce(sum(df), 0)::int FROM rag_scope_lexicon) AS df`.execute(db)
      ).rows[0];
    const before = await counts();
    for (let i = 0; i < 3; i += 1) await addDocument(users.a, projects.p1, i === 0);
    const added = documents.slice(-3);
    expect(await counts()).toEqual({
      chunks: before.chunks + 3,
      postings: before.postings + 3,
      orphans: 0,
      counted: before.counted + 3,
      df: before.df + 3,
    });

    // A document deleted (its chunks by cascade), then two documents' chunks in one statement.
    await db.deleteFrom('documents').where('id', '=', added[0].id).execute();
    expect(await counts()).toEqual({
      chunks: before.chunks + 2,
      postings: before.postings + 2,
      orphans: 0,
      counted: before.counted + 2,
      df: before.df + 2,
    });
    await db.deleteFrom('documentChunks').where('documentId', 'in', [added[1].id, added[2].id]).execute();
    expect(await counts()).toEqual({ ...before, orphans: 0 });
  });

  it("a chunk written without its scope is stamped with its document's scope", async () => {
    const document = documents.find((d) => d.authorId === users.b && d.projectId === projects.p2 && !d.isPublic)!;
    const id = randomUUID();
    await sql`INSERT INTO document_chunks (id, document_id, chunk_index, text, start_offset, end_offset, content_sha256, embedding_model, embedding_dims, tsv, token_count)
              VALUES (${id}, ${document.id}, 99, 'word', 0, 4, 'x', 'm', 2, to_tsvector('english', 'word'), 1)`.execute(
      db,
    );
    const { rows } = await sql<{ statScope: string }>`SELECT stat_scope FROM document_chunks WHERE id = ${id}`.execute(
      db,
    );
    expect(rows[0].statScope).toBe(`u:${users.b}:${projects.p2}`);
    await sql`DELETE FROM document_chunks WHERE id = ${id}`.execute(db);
  });
});
