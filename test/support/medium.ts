import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorkerContext } from '../../src/app.factory.js';
import type { Actor } from '../../src/common/auth/actor.js';
import { JsonLogger } from '../../src/common/logging/json-logger.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { KYSELY, type Db } from '../../src/database/kysely.provider.js';
import { createTestDatabase, testAppEnv, type TestDatabase } from './test-app.js';

/**
 * The medium tier: the services of the real modules against a real, freshly migrated database, without HTTP.
 * What an e2e suite proves through routes (who sees what, filters, counts), a medium spec proves by calling the
 * service with an {@link Actor} and rows made directly by {@link MediumFactories} — no registration, no password
 * hashing, no login per user. One context per spec file (`useMediumContext()` in a describe block); the rows of
 * one test stay visible to the next, so tests make their own users (fresh ids) rather than truncating.
 *
 * Runs on TEST_DATABASE_URL's PostgreSQL (+ TEST_REDIS_URL) when set, on embedded PGlite otherwise, exactly as
 * the e2e suites do. The context runs as APP_ROLE=api by default: no queue processor picks jobs up behind the
 * test's back (pass `env: { APP_ROLE: 'all' }` for a spec that needs the workers).
 */
export interface MediumContext {
  /** The Nest application context (all modules of AppModule, no HTTP listener). */
  app: INestApplicationContext;
  config: AppConfig;
  database: TestDatabase;
  /** The app's own Kysely client (its pg pool): for factories and for asserting on rows. */
  db: Db;
  make: MediumFactories;
  /** A provider of the real module graph, e.g. `ctx.get(TasksService)`. */
  get<T>(token: abstract new (...args: never[]) => T): T;
  close(): Promise<void>;
}

export interface MediumOptions {
  /** Environment on top of the test defaults (APP_ROLE=api, LOG_LEVEL=error, a fresh DATA_DIR and Redis prefix). */
  env?: Record<string, string>;
}

export async function startMediumContext(options: MediumOptions = {}): Promise<MediumContext> {
  const database = await createTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-medium-'));
  const config = loadConfig(testAppEnv(dataDir, { APP_ROLE: 'api', ...options.env }));
  let app: INestApplicationContext;
  try {
    // The same module graph as `node dist/src/worker.js` builds (createApplicationContext initialises it, migrations included).
    app = await createWorkerContext({ config, databaseUrl: database.url, logger: new JsonLogger(config.logLevel) });
  } catch (error) {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const db = app.get<Db>(KYSELY);
  return {
    app,
    config,
    database,
    db,
    make: new MediumFactories(db),
    get: (token) => app.get(token),
    close: async () => {
      await app.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Registers beforeAll/afterAll for one context per spec file and returns its accessor:
 *
 *     const medium = useMediumContext();
 *     it('…', async () => { const tasks = medium().get(TasksService); … });
 */
export function useMediumContext(options: MediumOptions = {}): () => MediumContext {
  let context: MediumContext | undefined;
  beforeAll(async () => {
    context = await startMediumContext(options);
  }, 120_000);
  afterAll(async () => {
    await context?.close();
  });
  return () => {
    if (!context)
      throw new Error(
        'the medium context is not started (call useMediumContext() inside describe, use it inside a test)',
      );
    return context;
  };
}

export interface UserRow {
  id: string;
  email: string;
  name: string;
  role: 'admin' | 'member';
}

export interface ProjectRow {
  id: string;
  name: string;
  ownerId: string;
}

export interface TaskRow {
  id: string;
  title: string;
  status: string;
  priority: string;
  dueDate: string | null;
  creatorId: string;
  assigneeId: string | null;
  projectId: string | null;
  createdAt: Date;
}

export interface DocumentRow {
  id: string;
  title: string;
  authorId: string;
  projectId: string | null;
  isPublic: boolean;
  status: string;
}

export type ProjectMemberRole = 'owner' | 'editor' | 'viewer';

let sequence = 0;
const next = (): number => (sequence += 1);

/**
 * Rows inserted directly with the app's Kysely client, with the columns a rule or a filter reads and
 * defaults for the rest. No service runs, so a factory cannot hide a bug of the code under test; what
 * the schema enforces (foreign keys, checks) still holds.
 */
export class MediumFactories {
  constructor(private readonly db: Db) {}

  /** A user who never logs in (the password hash is a placeholder no password matches). */
  async user(overrides: Partial<Pick<UserRow, 'email' | 'name' | 'role'>> = {}): Promise<UserRow> {
    const n = next();
    const row = {
      id: randomUUID(),
      email: overrides.email ?? `medium${n}-${randomBytes(3).toString('hex')}@example.com`,
      name: overrides.name ?? `Medium user ${n}`,
      role: overrides.role ?? 'member',
    };
    await this.db
      .insertInto('users')
      .values({ ...row, passwordHash: 'medium-test:no-login' })
      .execute();
    return row;
  }

  /** A project owned by `owner` (an owner membership row, as the service makes) with the given members. */
  async project(
    owner: { id: string },
    options: { name?: string; members?: { user: { id: string }; role: ProjectMemberRole }[] } = {},
  ): Promise<ProjectRow> {
    const row = { id: randomUUID(), name: options.name ?? `Project ${next()}`, ownerId: owner.id };
    await this.db.insertInto('projects').values({ id: row.id, name: row.name, ownerId: owner.id }).execute();
    await this.member(row, owner, 'owner');
    for (const { user, role } of options.members ?? []) await this.member(row, user, role);
    return row;
  }

  async member(project: { id: string }, user: { id: string }, role: ProjectMemberRole): Promise<void> {
    await this.db.insertInto('projectMembers').values({ projectId: project.id, userId: user.id, role }).execute();
  }

  /**
   * A task made by `creator`. `createdAt` places it in time (lists are newest first); by default each task is
   * one millisecond younger than the previous one, so the order of creation is the order of the rows.
   */
  async task(
    creator: { id: string },
    fields: Partial<Omit<TaskRow, 'id' | 'creatorId'>> & { description?: string } = {},
  ): Promise<TaskRow> {
    const n = next();
    const row: TaskRow = {
      id: randomUUID(),
      title: fields.title ?? `Task ${n}`,
      status: fields.status ?? 'todo',
      priority: fields.priority ?? 'medium',
      dueDate: fields.dueDate ?? null,
      creatorId: creator.id,
      assigneeId: fields.assigneeId ?? null,
      projectId: fields.projectId ?? null,
      createdAt: fields.createdAt ?? new Date(Date.UTC(2026, 0, 1) + n),
    };
    await this.db
      .insertInto('tasks')
      .values({
        id: row.id,
        title: row.title,
        description: fields.description ?? '',
        status: row.status,
        priority: row.priority,
        dueDate: row.dueDate,
        creatorId: row.creatorId,
        assigneeId: row.assigneeId,
        projectId: row.projectId,
        createdAt: row.createdAt,
        updatedAt: row.createdAt,
      })
      .execute();
    return row;
  }

  /** A plain-text document as `author` wrote it, already indexed unless `status` says otherwise (no chunks are made). */
  async document(
    author: { id: string },
    fields: Partial<Omit<DocumentRow, 'id' | 'authorId'>> & { text?: string } = {},
  ): Promise<DocumentRow> {
    const n = next();
    const text = fields.text ?? `Document ${n} text`;
    const bytes = Buffer.from(text);
    const row: DocumentRow = {
      id: randomUUID(),
      title: fields.title ?? `Document ${n}`,
      authorId: author.id,
      projectId: fields.projectId ?? null,
      isPublic: fields.isPublic ?? false,
      status: fields.status ?? 'indexed',
    };
    await this.db
      .insertInto('documents')
      .values({
        id: row.id,
        title: row.title,
        authorId: row.authorId,
        projectId: row.projectId,
        isPublic: row.isPublic,
        status: row.status,
        origin: 'text',
        mimeType: 'text/plain',
        content: bytes,
        sizeBytes: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        textContent: text,
        indexedAt: row.status === 'indexed' ? new Date() : null,
      })
      .execute();
    return row;
  }
}

/** The actor of a user's own access token (unpinned), or pinned like an API key / project session token. */
export function actorOf(
  user: { id: string },
  pins: Partial<Pick<Actor, 'projectIds' | 'repos' | 'projectRoleCap'>> = {},
): Actor {
  return {
    userId: user.id,
    projectIds: pins.projectIds ?? null,
    repos: pins.repos ?? null,
    ...(pins.projectRoleCap ? { projectRoleCap: pins.projectRoleCap } : {}),
  };
}
