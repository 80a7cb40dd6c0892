import type { INestApplicationContext } from '@nestjs/common';
import type { AuditVia } from '../../src/modules/audit/audit-entry.js';
import { runAsAuditActor } from '../../src/modules/audit/audit-context.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { createWorkerContext } from '../../src/app.factory.js';
import {
  accessOutcome,
  deletableTask,
  editableDocument,
  editableTask,
  mayCreateWithoutProject,
  projectRoleAtLeast,
  visibleAgentRun,
  visibleDocument,
  visibleIndexingJob,
  visibleProject,
  visibleRepo,
  visibleTask,
  type AccessOutcome,
} from '../../src/common/access/access-rules.js';
import type { ProjectRole } from '../../src/common/access/project-roles.js';
import type { Actor } from '../../src/common/auth/actor.js';
import { AppException } from '../../src/common/errors/app.exception.js';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import { JsonLogger } from '../../src/common/logging/json-logger.js';
import { loadConfig } from '../../src/config/app-config.js';
import { KYSELY, type Db } from '../../src/database/kysely.provider.js';
import { AgentRunsService } from '../../src/modules/agent/agent-runs.service.js';
import { DocumentsService } from '../../src/modules/documents/documents.service.js';
import { GithubReposService } from '../../src/modules/github/github-repos.service.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { IndexingJobsService } from '../../src/modules/rag/indexing-jobs.service.js';
import { TasksService } from '../../src/modules/tasks/tasks.service.js';
import { insertTextDocument } from '../support/factories.js';
import { createTestDatabase, type TestDatabase } from '../support/test-app.js';

/**
 * The rule table of the access module (src/common/access/access-rules.ts): caller kind × object kind × action →
 * outcome, every cell checked twice on a real database: through the services (what a caller gets) and through
 * the module's predicates alone (what the rule says). No HTTP: one application context, rows inserted directly.
 *
 * Each caller kind is its own user U with its own project P (owned by another user O, U a member) and its own
 * objects, so the cells cannot see each other's rows. Objects, relative to the caller:
 *   personal_task      created by U, no project
 *   project_task       in P, created by O, assigned to U
 *   own_private_doc    by U in P, private
 *   other_private_doc  by O in P, private
 *   public_project_doc by O in P, public
 *   public_free_doc    by O, no project, public
 *   project            P (U an editor; the "token_owner" caller's U is an owner)
 *   foreign_project    a project of O's that U is not a member of
 *   repo               a registered GitHub repository, acme/allowed
 *   own_agent_run      started by U in P        } read and list only (deciding about a run's writes has its
 *   other_agent_run    started by O in P        }  own rule, mayDecideAgentRun, covered by the agent suites)
 *   project_job        an indexing job of P     } read only through the service (no service lists jobs: the
 *   free_job           U's indexing job without a project  } list cell is the predicate's alone)
 * Create means creating that kind of object: a task / a document (private or public) in P, or without a
 * project; a project. Outcomes: A allowed, N not_found, F forbidden, I invalid_argument (a pinned caller
 * creating outside every project), - no such action for this caller (no route or tool offers it: projects
 * are not deleted; only a user token creates projects; registered repositories are admin routes).
 */
const CALLERS = [
  'user',
  'unpinned_key',
  'pinned_key',
  'token_owner',
  'token_editor',
  'token_viewer',
  'agent_run',
] as const;
type Caller = (typeof CALLERS)[number];
const AUDIT_VIA_OF: Record<Caller, AuditVia> = {
  user: 'user_token',
  unpinned_key: 'api_key',
  pinned_key: 'api_key',
  token_owner: 'project_token',
  token_editor: 'project_token',
  token_viewer: 'project_token',
  agent_run: 'agent_run',
};
const ACTIONS = ['read', 'list', 'update', 'delete', 'create'] as const;
type Action = (typeof ACTIONS)[number];
const OBJECTS = [
  'personal_task',
  'project_task',
  'own_private_doc',
  'other_private_doc',
  'public_project_doc',
  'public_free_doc',
  'project',
  'foreign_project',
  'repo',
  'own_agent_run',
  'other_agent_run',
  'project_job',
  'free_job',
] as const;
const NOT_APPLICABLE = '                           -    -        -      -       -      -        -';
type ObjectKind = (typeof OBJECTS)[number];

//                                     user unpinned pinned tok-own tok-ed tok-view agent
const RULES: Record<ObjectKind, Record<Action, string>> = {
  personal_task: {
    read: '                             A    A        N      N       N      N        N',
    list: '                             A    A        N      N       N      N        N',
    update: '                           A    A        N      N       N      N        N',
    delete: '                           A    A        N      N       N      N        N',
    create: '                           A    A        I      I       I      I        I',
  },
  project_task: {
    read: '                             A    A        A      A       A      A        A',
    list: '                             A    A        A      A       A      A        A',
    update: '                           A    A        A      A       A      A        A',
    delete: '                           F    F        F      F       F      F        F',
    create: '                           A    A        A      A       A      A        A',
  },
  own_private_doc: {
    read: '                             A    A        A      A       A      A        A',
    list: '                             A    A        A      A       A      A        A',
    update: '                           A    A        A      A       A      F        A',
    delete: '                           A    A        A      A       A      F        A',
    create: '                           A    A        A      A       A      F        A',
  },
  other_private_doc: {
    read: '                             N    N        N      N       N      N        N',
    list: '                             N    N        N      N       N      N        N',
    update: '                           N    N        N      N       N      N        N',
    delete: '                           N    N        N      N       N      N        N',
    create: '                           -    -        -      -       -      -        -',
  },
  public_project_doc: {
    read: '                             A    A        A      A       A      A        A',
    list: '                             A    A        A      A       A      A        A',
    update: '                           F    F        F      F       F      F        F',
    delete: '                           F    F        F      F       F      F        F',
    create: '                           A    A        A      A       A      F        A',
  },
  public_free_doc: {
    read: '                             A    A        N      N       N      N        N',
    list: '                             A    A        N      N       N      N        N',
    update: '                           F    F        N      N       N      N        N',
    delete: '                           F    F        N      N       N      N        N',
    create: '                           A    A        I      I       I      I        I',
  },
  project: {
    read: '                             A    A        A      A       A      A        A',
    list: '                             A    A        A      A       A      A        A',
    update: '                           A    A        A      A       A      F        A',
    delete: '                           -    -        -      -       -      -        -',
    create: '                           A    -        -      -       -      -        -',
  },
  foreign_project: {
    read: '                             N    N        N      N       N      N        N',
    list: '                             N    N        N      N       N      N        N',
    update: '                           N    N        N      N       N      N        N',
    delete: '                           -    -        -      -       -      -        -',
    create: '                           -    -        -      -       -      -        -',
  },
  repo: {
    read: '                             A    A        A      N       N      N        A',
    list: '                             A    A        A      N       N      N        A',
    update: '                           -    -        -      -       -      -        -',
    delete: '                           -    -        -      -       -      -        -',
    create: '                           -    -        -      -       -      -        -',
  },
  own_agent_run: {
    read: '                             A    A        A      A       A      A        A',
    list: '                             A    A        A      A       A      A        A',
    update: NOT_APPLICABLE,
    delete: NOT_APPLICABLE,
    create: NOT_APPLICABLE,
  },
  other_agent_run: {
    read: '                             N    N        N      N       N      N        N',
    list: '                             N    N        N      N       N      N        N',
    update: NOT_APPLICABLE,
    delete: NOT_APPLICABLE,
    create: NOT_APPLICABLE,
  },
  project_job: {
    read: '                             A    A        A      A       A      A        A',
    list: '                             A    A        A      A       A      A        A',
    update: NOT_APPLICABLE,
    delete: NOT_APPLICABLE,
    create: NOT_APPLICABLE,
  },
  free_job: {
    read: '                             A    A        N      N       N      N        N',
    list: '                             A    A        N      N       N      N        N',
    update: NOT_APPLICABLE,
    delete: NOT_APPLICABLE,
    create: NOT_APPLICABLE,
  },
};

const LETTERS: Record<string, AccessOutcome | 'invalid_argument' | 'n/a'> = {
  A: 'allowed',
  N: 'not_found',
  F: 'forbidden',
  I: 'invalid_argument',
  '-': 'n/a',
};
type Expected = (typeof LETTERS)[string];

function expected(object: ObjectKind, action: Action, caller: Caller): Expected {
  const letters = RULES[object][action].trim().split(/\s+/);
  if (letters.length !== CALLERS.length) throw new Error(`rule row ${object}.${action} has ${letters.length} cells`);
  return LETTERS[letters[CALLERS.indexOf(caller)]];
}

interface World {
  caller: Caller;
  actor: Actor;
  projectId: string;
  foreignProjectId: string;
  ids: Record<Exclude<ObjectKind, 'repo'>, string>;
}

const REPO = 'acme/allowed';

describe('access rule table (medium: services and predicates on a real database)', () => {
  let database: TestDatabase;
  let context: INestApplicationContext;
  let dataDir: string;
  let db: Db;
  let tasks: TasksService;
  let documents: DocumentsService;
  let projects: ProjectsService;
  let repos: GithubReposService;
  let agentRuns: AgentRunsService;
  let indexingJobs: IndexingJobsService;
  const worlds = new Map<Caller, World>();

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'atrium-medium-'));
    const config = loadConfig({
      NODE_ENV: 'test',
      DATA_DIR: dataDir,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
      APP_ROLE: 'api',
      REDIS_URL: process.env.TEST_REDIS_URL,
      REDIS_PREFIX: `atrium-medium-${randomBytes(4).toString('hex')}`,
    });
    context = await createWorkerContext({ config, databaseUrl: database.url, logger: new JsonLogger(config.logLevel) });
    db = context.get<Db>(KYSELY);
    tasks = context.get(TasksService);
    documents = context.get(DocumentsService);
    projects = context.get(ProjectsService);
    repos = context.get(GithubReposService);
    agentRuns = context.get(AgentRunsService);
    indexingJobs = context.get(IndexingJobsService);
    await db
      .insertInto('githubRepositories')
      .values({
        id: randomUUID(),
        owner: 'acme',
        name: 'allowed',
        fullName: 'Acme/Allowed',
        githubId: '1',
        defaultBranch: 'main',
        description: null,
        tokenCiphertext: null,
        createdBy: null,
      })
      .execute();
    for (const caller of CALLERS) worlds.set(caller, await seedWorld(caller));
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function insertUser(): Promise<string> {
    const id = randomUUID();
    await db
      .insertInto('users')
      .values({ id, email: `${id}@example.com`, name: 'U', passwordHash: 'x' })
      .execute();
    return id;
  }

  async function insertProject(ownerId: string, members: [string, ProjectRole][]): Promise<string> {
    const id = randomUUID();
    await db.insertInto('projects').values({ id, name: 'p', ownerId }).execute();
    await db
      .insertInto('projectMembers')
      .values(
        [[ownerId, 'owner'] as [string, ProjectRole], ...members].map(([userId, role]) => ({
          projectId: id,
          userId,
          role,
        })),
      )
      .execute();
    return id;
  }

  async function insertTask(creatorId: string, assigneeId: string | null, projectId: string | null): Promise<string> {
    const id = randomUUID();
    await db.insertInto('tasks').values({ id, title: 'task', creatorId, assigneeId, projectId }).execute();
    return id;
  }

  async function insertDocument(authorId: string, projectId: string | null, isPublic: boolean): Promise<string> {
    const text = `doc ${randomUUID()}`;
    const extra = { textContent: text, status: 'indexed' as const };
    return (await insertTextDocument(db, { authorId, projectId, isPublic, title: 'doc', text }, extra)).id;
  }

  async function insertAgentRun(userId: string, projectId: string): Promise<string> {
    const id = randomUUID();
    await db
      .insertInto('agentRuns')
      .values({
        id,
        userId,
        projectId,
        actor: JSON.stringify({ userId, projectIds: [projectId], repos: null }),
        input: 'hi',
        maxSteps: 1,
        model: 'm',
        provider: 'p',
      })
      .execute();
    return id;
  }

  async function insertIndexingJob(createdBy: string, projectId: string | null): Promise<string> {
    const id = randomUUID();
    await db
      .insertInto('indexingJobs')
      .values({ id, createdBy, projectId, kind: 'reindex', documentIds: [] })
      .execute();
    return id;
  }

  async function seedWorld(caller: Caller): Promise<World> {
    const userId = await insertUser();
    const otherId = await insertUser();
    const projectId = await insertProject(otherId, [[userId, caller === 'token_owner' ? 'owner' : 'editor']]);
    const foreignProjectId = await insertProject(otherId, []);
    const pinned = [projectId];
    const actors: Record<Caller, Actor> = {
      user: { userId, projectIds: null, repos: null },
      unpinned_key: { userId, projectIds: null, repos: null },
      pinned_key: { userId, projectIds: pinned, repos: ['ACME/allowed'] },
      token_owner: { userId, projectIds: pinned, repos: [], projectRoleCap: 'editor' },
      token_editor: { userId, projectIds: pinned, repos: [], projectRoleCap: 'editor' },
      token_viewer: { userId, projectIds: pinned, repos: [], projectRoleCap: 'viewer' },
      // As AgentRunsService builds it: pinned to the run's project, the starting user's repository pins.
      agent_run: { userId, projectIds: pinned, repos: null },
    };
    return {
      caller,
      actor: actors[caller],
      projectId,
      foreignProjectId,
      ids: {
        personal_task: await insertTask(userId, null, null),
        project_task: await insertTask(otherId, userId, projectId),
        own_private_doc: await insertDocument(userId, projectId, false),
        other_private_doc: await insertDocument(otherId, projectId, false),
        public_project_doc: await insertDocument(otherId, projectId, true),
        public_free_doc: await insertDocument(otherId, null, true),
        project: projectId,
        foreign_project: foreignProjectId,
        own_agent_run: await insertAgentRun(userId, projectId),
        other_agent_run: await insertAgentRun(otherId, projectId),
        project_job: await insertIndexingJob(otherId, projectId),
        free_job: await insertIndexingJob(userId, null),
      },
    };
  }

  /** What a service call ends in. */
  async function outcome(call: () => Promise<unknown>): Promise<Expected> {
    try {
      await call();
      return 'allowed';
    } catch (error) {
      if (!(error instanceof AppException)) throw error;
      if (error.code === ErrorCode.NotFound) return 'not_found';
      if (error.code === ErrorCode.Forbidden) return 'forbidden';
      if (error.code === ErrorCode.InvalidArgument) return 'invalid_argument';
      throw error;
    }
  }

  const listed = (items: { id: string }[], id: string): Expected =>
    items.some((item) => item.id === id) ? 'allowed' : 'not_found';

  /** The service's answer to one cell; undefined where no service offers the action (the indexing jobs' list). */
  async function viaService(world: World, object: ObjectKind, action: Action): Promise<Expected | undefined> {
    const { actor, projectId } = world;
    const id = object === 'repo' ? REPO : world.ids[object];
    if (object.endsWith('_agent_run')) {
      if (action === 'read') return outcome(() => agentRuns.get(actor, id));
      return listed(
        (await agentRuns.history(actor, { limit: 200 })).items.map((run) => ({ id: run.jobId })),
        id,
      );
    }
    if (object.endsWith('_job')) return action === 'read' ? outcome(() => indexingJobs.get(actor, id)) : undefined;
    const kind = object.endsWith('_task')
      ? 'task'
      : object.endsWith('_doc')
        ? 'doc'
        : object === 'repo'
          ? 'repo'
          : 'project';
    if (kind === 'task') {
      if (action === 'read') return outcome(() => tasks.get(actor, id));
      if (action === 'list')
        return listed(JSON.parse((await tasks.list(actor, { limit: 200 })).json) as { id: string }[], id);
      if (action === 'update') return outcome(() => tasks.update(actor, id, { title: 'renamed' }));
      if (action === 'delete') return outcome(() => tasks.delete(actor, id));
      const target = object === 'personal_task' ? null : projectId;
      return outcome(() =>
        tasks.create(actor, {
          title: 't',
          description: '',
          status: 'todo',
          priority: 'medium',
          dueDate: null,
          assigneeId: null,
          projectId: target,
        }),
      );
    }
    if (kind === 'doc') {
      if (action === 'read') return outcome(() => documents.get(actor, id));
      if (action === 'list') return listed((await documents.listVisible(actor, { limit: 200 })).items, id);
      // Visibility unchanged, so no indexing event: the cell is about access, not about the index.
      if (action === 'update')
        return outcome(() =>
          documents.update(actor, id, { isPublic: object === 'public_project_doc' || object === 'public_free_doc' }),
        );
      if (action === 'delete') return outcome(() => documents.delete(actor, id));
      const target = object === 'public_free_doc' ? null : projectId;
      return outcome(() =>
        documents.createFromText(actor, {
          title: 'new',
          content: 'text',
          projectId: target,
          isPublic: object !== 'own_private_doc',
        }),
      );
    }
    if (kind === 'project') {
      if (action === 'read') return outcome(() => projects.get(actor, id));
      if (action === 'list') return listed((await projects.list(actor, { limit: 200 })).items, id);
      if (action === 'update') return outcome(() => projects.update(actor, id, { name: 'renamed' }));
      return outcome(() => projects.create(actor, { name: 'new' }));
    }
    if (action === 'read') return outcome(() => repos.resolveForActor(actor, id));
    return listed(
      (await repos.listForActor(actor)).map((repo) => ({ id: repo.fullName.toLowerCase() })),
      id,
    );
  }

  /** The module's answer to one cell: its predicates evaluated on the same row. */
  async function viaModule(world: World, object: ObjectKind, action: Action): Promise<Expected> {
    const { actor, projectId } = world;
    const holds = async (
      table: 'tasks' | 'documents' | 'projects' | 'githubRepositories' | 'agentRuns' | 'indexingJobs',
      alias: string,
      predicate: RawBuilder<SqlBool>,
      where: RawBuilder<SqlBool>,
    ) =>
      (await db
        .selectFrom(`${table} as ${alias}` as 'tasks as t')
        .select(sql<number>`1`.as('one'))
        .where(where)
        .where(predicate)
        .executeTakeFirst()) !== undefined;
    const projectHolds = (id: string, role: ProjectRole) =>
      holds('projects', 'p', projectRoleAtLeast(actor, role, 'p.id'), sql<SqlBool>`p.id = ${id}`);
    const createIn = async (target: string | null, role: ProjectRole): Promise<Expected> =>
      target === null
        ? mayCreateWithoutProject(actor)
          ? 'allowed'
          : 'invalid_argument'
        : accessOutcome(await projectHolds(target, 'viewer'), await projectHolds(target, role));

    if (object === 'repo') {
      return (await holds(
        'githubRepositories',
        'r',
        visibleRepo(actor, 'r'),
        sql<SqlBool>`lower(r.full_name) = ${REPO}`,
      ))
        ? 'allowed'
        : 'not_found';
    }
    const id = world.ids[object];
    if (object.endsWith('_agent_run'))
      return (await holds('agentRuns', 'r', visibleAgentRun(actor, 'r'), sql<SqlBool>`r.id = ${id}`))
        ? 'allowed'
        : 'not_found';
    if (object.endsWith('_job'))
      return (await holds('indexingJobs', 'j', visibleIndexingJob(actor, 'j'), sql<SqlBool>`j.id = ${id}`))
        ? 'allowed'
        : 'not_found';
    if (object.endsWith('_task')) {
      if (action === 'create') return createIn(object === 'personal_task' ? null : projectId, 'viewer');
      const row = sql<SqlBool>`t.id = ${id}`;
      const visible = await holds('tasks', 't', visibleTask(actor, 't'), row);
      if (action === 'read' || action === 'list') return accessOutcome(visible, true);
      return accessOutcome(
        visible,
        await holds('tasks', 't', action === 'update' ? editableTask(actor, 't') : deletableTask(actor, 't'), row),
      );
    }
    if (object.endsWith('_doc')) {
      if (action === 'create') return createIn(object === 'public_free_doc' ? null : projectId, 'editor');
      const row = sql<SqlBool>`d.id = ${id}`;
      const visible = await holds('documents', 'd', visibleDocument(actor, 'd'), row);
      if (action === 'read' || action === 'list') return accessOutcome(visible, true);
      return accessOutcome(visible, await holds('documents', 'd', editableDocument(actor, 'd'), row));
    }
    if (action === 'create') return 'allowed'; // creating a project needs no rule of the module; the door decides who may
    const visible = await holds('projects', 'p', visibleProject(actor, 'p'), sql<SqlBool>`p.id = ${id}`);
    if (action === 'read' || action === 'list') return accessOutcome(visible, true);
    return accessOutcome(visible, await projectHolds(id, 'editor'));
  }

  it('every cell: the services and the module predicates give the table’s outcome', async () => {
    const mismatches: string[] = [];
    let checked = 0;
    // Reads first, then changes, deletes last, so each cell meets its object as seeded.
    for (const action of ['read', 'list', 'create', 'update', 'delete'] as const) {
      for (const caller of CALLERS) {
        for (const object of OBJECTS) {
          const want = expected(object, action, caller);
          if (want === 'n/a') continue;
          const world = worlds.get(caller)!;
          const byModule = await viaModule(world, object, action);
          // Services called without an HTTP request name their audit actor explicitly (the credential is not under test here).
          const auditActor = { userId: world.actor.userId, via: AUDIT_VIA_OF[caller], credentialId: null };
          const byService = (await runAsAuditActor(auditActor, () => viaService(world, object, action))) ?? byModule;
          checked += 1;
          if (byModule !== want || byService !== want)
            mismatches.push(`${caller} ${action} ${object}: table ${want}, module ${byModule}, service ${byService}`);
        }
      }
    }
    expect(mismatches).toEqual([]);
    expect(checked).toBeGreaterThan(200);
    // Several hundred cells, each a few statements in sequence: minutes on a loaded shared machine.
  }, 300_000);

  it('counts agree with the lists: project document counts and task stats count only what the caller may see', async () => {
    const fresh = await seedWorld('token_viewer');
    const project = await projects.get(fresh.actor, fresh.projectId);
    const visibleInProject = (await documents.listVisible(fresh.actor, { projectId: fresh.projectId, limit: 200 }))
      .items;
    // Own private + the public one; the other member's private document stays out of the count.
    expect(visibleInProject.map((doc) => doc.id).sort()).toEqual(
      [fresh.ids.own_private_doc, fresh.ids.public_project_doc].sort(),
    );
    expect(project.documentCount).toBe(visibleInProject.length);
    expect(project.memberCount).toBe(2);
    const stats = await tasks.stats(fresh.actor, undefined);
    expect(stats.total).toBe((await tasks.list(fresh.actor, { limit: 200 })).found);
    expect(stats.total).toBe(1); // the project task; the personal one is outside the pin
  });
});
