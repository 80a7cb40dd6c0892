import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  call,
  drillSeed,
  envInt,
  excerpt,
  internalsIn,
  Prng,
  type RawRequest,
  type RawResponse,
} from './support/drill-helpers';
import { DatabasePool } from '../src/database/database-pool';
import { makeUser, type TestUser } from './support/factories';
import { FakeLlmServer } from './support/fake-llm-server';
import { createTestDatabase, startTestApp, type TestApp } from './support/test-app';
import { pollUntil } from './support/wait';

/**
 * Isolation drill (OWASP API1/API5: broken object- and function-level authorization).
 *
 * Seeds users, projects with members, API keys with random scopes and project pins, OAuth grants
 * (access tokens, which must act exactly like keys with the scopes and pins chosen at consent), project
 * session tokens, tasks and documents (on PostgreSQL written as pending segments); then fires random calls at
 * every Area A tool and the Area B routes with every kind of credential. Each answer is checked against a
 * model kept in this file, built only from what the test created (it never asks the services): the status
 * must be one the model allows, a list must hold exactly what the caller may see, and no body may carry an
 * id or marker of something the caller may not see. Replay a failure with DRILL_SEED=<seed>; DRILL_CALLS /
 * DRILL_SECONDS size the run.
 */

type Role = 'owner' | 'editor' | 'viewer';
const RANK: Record<Role, number> = { viewer: 1, editor: 2, owner: 3 };
const SCOPES = ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'] as const;
type Scope = (typeof SCOPES)[number];

interface MProject {
  id: string;
  name: string;
  ownerId: string;
  members: Map<string, Role>;
}
interface MTask {
  id: string;
  marker: string;
  creator: string;
  assignee: string | null;
  project: string | null;
  deleted: boolean;
}
interface MDoc {
  id: string;
  marker: string;
  author: string;
  project: string | null;
  isPublic: boolean;
  deleted: boolean;
}
interface MKey {
  id: string;
  userId: string;
  scopes: Scope[];
  pins: string[] | null;
  token: string;
  marker: string;
  revoked: boolean;
  spare: boolean;
  oauth?: boolean;
  /** The credential's tools allowlist (null: every tool of its scopes) and read-only choice. */
  tools: string[] | null;
  readOnly: boolean;
}
interface MProjectToken {
  id: string;
  userId: string;
  projectId: string;
  role: 'editor' | 'viewer';
  token: string;
}
/** Who acts, as the services see it. */
interface Actor {
  userId: string;
  pins: string[] | null;
  cap?: 'editor' | 'viewer';
}

interface Expectation {
  statuses: number[];
  /** Allowed error codes (Area A `error.code` / Area B `error.code`) when not 2xx. */
  codes?: string[];
  /** Extra check of a 2xx answer; returns a problem description or null. */
  check?: (body: any) => string | null;
  /** Applies a successful write to the model. */
  apply?: (body: any) => void;
}

interface Probe {
  label: string;
  request: RawRequest;
  expect: Expectation;
  /** Whose view the leak scan takes (null = no identity: nothing is visible). */
  viewer: Actor | null;
}

const TOOL_SCOPE: Record<string, Scope> = {
  list_tasks: 'tasks:read',
  get_task: 'tasks:read',
  search_tasks: 'tasks:read',
  task_stats: 'tasks:read',
  create_task: 'tasks:write',
  update_task: 'tasks:write',
  delete_task: 'tasks:write',
  list_documents: 'docs:read',
  get_document: 'docs:read',
  search_documents: 'docs:read',
  create_document: 'docs:write',
  update_document: 'docs:write',
  delete_document: 'docs:write',
  list_repositories: 'github:read',
  list_commits: 'github:read',
  list_issues: 'github:read',
  list_pull_requests: 'github:read',
  list_workflow_runs: 'github:read',
  create_issue: 'github:write',
  create_issue_comment: 'github:write',
};

const seed = drillSeed();
// A number of calls rather than a time, so that a seed replays the same run on any machine and a busy CI machine
// probes as much as a quiet one; the number is several times what found the leaks of a broken task rule.
const maxCalls = envInt('DRILL_CALLS', 2_000);
// A ceiling only, for a machine so slow that the calls above would not fit the Jest timeout.
const seconds = envInt('DRILL_SECONDS', process.env.DRILL_CALLS ? 3600 : process.env.TEST_DATABASE_URL ? 45 : 30);

describe(`isolation drill (seed ${seed})`, () => {
  let t: TestApp;
  let llm: FakeLlmServer;
  const rng = new Prng(seed);
  const users: TestUser[] = [];
  const projects = new Map<string, MProject>();
  const tasks = new Map<string, MTask>();
  const docs = new Map<string, MDoc>();
  const keys: MKey[] = [];
  const projectTokens: MProjectToken[] = [];
  /** Every session token id the drill minted, with its project (the seed's and the random mints'). */
  const tokenProjects = new Map<string, string>();
  const marker = (kind: string) => `zq${kind}${rng.hex(12)}`;
  /** The personal API keys (the /api/api-keys routes know nothing of OAuth grants). */
  const apiKeys = () => keys.filter((k) => !k.oauth);

  // ---- the model -------------------------------------------------------------------------------
  const roleIn = (userId: string, projectId: string): Role | null =>
    projects.get(projectId)?.members.get(userId) ?? null;
  /** Who a task may be assigned to: a member of its project, or the caller itself for a personal task. */
  const assignable = (a: Actor, projectId: string | null, assignee: string | null) =>
    assignee === null || (projectId === null ? assignee === a.userId : roleIn(assignee, projectId) !== null);
  const pinned = (a: Actor, projectId: string | null) =>
    a.pins === null || (projectId !== null && a.pins.includes(projectId));
  /** ProjectsService.roleOf as the contract states it: member, inside the pins, capped by a token's role. */
  const effectiveRole = (a: Actor, projectId: string): Role | null => {
    if (a.pins !== null && !a.pins.includes(projectId)) return null;
    const role = roleIn(a.userId, projectId);
    if (role === null) return null;
    return a.cap !== undefined && RANK[a.cap] < RANK[role] ? a.cap : role;
  };
  // A personal task (no project) is outside every pin, like a document without a project.
  const taskVisible = (a: Actor, task: MTask) =>
    !task.deleted && (task.creator === a.userId || task.assignee === a.userId) && pinned(a, task.project);
  const docVisible = (a: Actor, doc: MDoc) =>
    !doc.deleted &&
    (doc.author === a.userId || (doc.isPublic && (doc.project === null || roleIn(a.userId, doc.project) !== null))) &&
    (a.pins === null || (doc.project !== null && a.pins.includes(doc.project)));
  /** Author, and inside a project at least an editor there (after pins and caps). */
  const docChange = (a: Actor, doc: MDoc): 200 | 403 | 404 => {
    if (!docVisible(a, doc)) return 404;
    if (doc.author !== a.userId) return 403;
    if (doc.project === null) return 200;
    const role = effectiveRole(a, doc.project);
    return role === null || role === 'viewer' ? 403 : 200;
  };
  const keyActor = (k: MKey): Actor => ({ userId: k.userId, pins: k.pins });
  /** A random credential narrowing within its scopes: sometimes a tools allowlist, sometimes read-only, or both. */
  const randomNarrowing = (scopes: Scope[]): { tools: string[] | null; readOnly: boolean } => {
    const within = Object.keys(TOOL_SCOPE).filter((tool) => scopes.includes(TOOL_SCOPE[tool]));
    const tools = rng.chance(0.3) ? rng.subset(within, 0.5) : [];
    return { tools: tools.length > 0 ? tools : null, readOnly: rng.chance(0.25) };
  };
  const userActor = (u: TestUser): Actor => ({ userId: u.id, pins: null });
  const tokenActor = (pt: MProjectToken): Actor => ({ userId: pt.userId, pins: [pt.projectId], cap: pt.role });

  /** Everything the actor may not see: ids and markers that must never appear in its answers. */
  function forbiddenFor(a: Actor | null): string[] {
    const out: string[] = [];
    for (const task of tasks.values()) if (!a || !taskVisible(a, task)) out.push(task.id, task.marker);
    for (const doc of docs.values()) if (!a || !docVisible(a, doc)) out.push(doc.id, doc.marker);
    for (const project of projects.values()) if (!a || !project.members.has(a.userId)) out.push(project.name);
    for (const key of keys) if (!a || key.userId !== a.userId) out.push(key.id, key.marker);
    // A project token's secret is shown once, by its mint; no other answer may carry one.
    for (const pt of projectTokens) out.push(pt.token);
    return out;
  }

  /**
   * A list answer against the model: exactly the allowed ids. Lists are asked for with `limit` 200 (or
   * 100); when the model allows more than that (a long run makes hundreds of documents), the answer must
   * be a full page of allowed ids only (the model does not track creation order, so not which page).
   */
  const sameIds = (got: unknown, want: string[], what: string, limit = 200): string | null => {
    if (!Array.isArray(got)) return `${what}: not an array`;
    const ids = got.map((item: any) => item.id ?? item.document_id).sort();
    if (want.length > limit) {
      const allowed = new Set(want);
      const foreign = ids.filter((id) => !allowed.has(id));
      if (ids.length === limit && new Set(ids).size === limit && foreign.length === 0) return null;
      return `${what}: got ${ids.length} (${new Set(ids).size} distinct), model allows ${want.length} with a page of ${limit}; not allowed: [${foreign.join(',')}]`;
    }
    const expected = [...want].sort();
    return JSON.stringify(ids) === JSON.stringify(expected)
      ? null
      : `${what}: got ${ids.length} [${ids.join(',')}], model says ${expected.length} [${expected.join(',')}]`;
  };

  // ---- seeding (through the public API, recording what was made) ------------------------------
  beforeAll(async () => {
    // eslint-disable-next-line no-console
    console.log(`drill-isolation: DRILL_SEED=${seed} (calls ≤ ${maxCalls}, ≤ ${seconds}s)`);
    llm = await new FakeLlmServer().start();
    // On PostgreSQL every document is written into pending segments of at most 16 chunks (told the database URL, as a
    // deployment is), so search reads documents from segments and, once more than 8 wait, merges them while it runs.
    const database = await createTestDatabase();
    const segments: Record<string, string> =
      database.kind === 'postgres'
        ? { DATABASE_URL: database.url, RAG_INDEX_SEGMENT_MIN_CHUNKS: '1', RAG_INDEX_SEGMENT_MAX_CHUNKS: '16' }
        : {};
    t = await startTestApp({
      database,
      env: {
        ...segments,
        RATE_LIMIT_KEY_PER_MIN: '1000000',
        RATE_LIMIT_USER_PER_MIN: '1000000',
        // Agent runs use a scripted OpenAI-compatible model that asks for what the run must not reach.
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: llm.baseUrl,
        LLM_API_KEY: 'sk-drill',
        LLM_MODEL: 'drill-model',
      },
    });
    for (let i = 0; i < 4; i++) users.push(await makeUser(t));
    const b = (u: TestUser, method: string, path: string, body?: unknown) =>
      call(t.baseUrl, { method, path, token: u.token, body });

    // Projects: u0, u1, u2 own one each, u0 a second; random others join with random roles.
    for (const owner of [users[0], users[1], users[2], users[0]]) {
      const name = marker('p');
      const res = await b(owner, 'POST', '/api/projects', { name, description: 'drill' });
      expect(res.status).toBe(201);
      const project: MProject = {
        id: res.json.data.id,
        name,
        ownerId: owner.id,
        members: new Map([[owner.id, 'owner']]),
      };
      projects.set(project.id, project);
      for (const other of users) {
        if (other.id === owner.id || rng.chance(0.35)) continue;
        const role = rng.pick<Role>(['owner', 'editor', 'viewer', 'viewer', 'editor']);
        const added = await b(owner, 'POST', `/api/projects/${project.id}/members`, { userId: other.id, role });
        expect([200, 201]).toContain(added.status);
        project.members.set(other.id, role);
      }
    }
    const projectIds = [...projects.keys()];

    // Per user: one unpinned all-scope key (used for seeding), then 2 random keys, one spare key to revoke.
    const makeKey = async (
      u: TestUser,
      scopes: Scope[],
      pins: string[] | null,
      spare = false,
      narrowing: { tools: string[] | null; readOnly: boolean } = { tools: null, readOnly: false },
    ) => {
      const name = marker('k');
      const res = await b(u, 'POST', '/api/api-keys', {
        name,
        scopes,
        expiresIn: rng.pick(['never', '30d', '1y']),
        ...(pins ? { projectIds: pins } : {}),
        ...(narrowing.tools ? { tools: narrowing.tools } : {}),
        ...(narrowing.readOnly ? { readOnly: true } : {}),
      });
      expect(res.status).toBe(201);
      const key: MKey = {
        id: res.json.data.id,
        userId: u.id,
        scopes,
        pins,
        token: res.json.data.key,
        marker: name,
        revoked: false,
        spare,
        ...narrowing,
      };
      keys.push(key);
      return key;
    };
    const seedKeys = new Map<string, MKey>();
    for (const u of users) {
      seedKeys.set(u.id, await makeKey(u, [...SCOPES], null));
      for (let i = 0; i < 2; i++) {
        let scopes = rng.subset(SCOPES, 0.5) as Scope[];
        if (scopes.length === 0) scopes = [rng.pick(SCOPES)];
        const pins = rng.chance(0.5) ? rng.subset(projectIds, 0.5) : null;
        await makeKey(u, scopes, pins && pins.length > 0 ? pins : null, false, randomNarrowing(scopes));
      }
      await makeKey(u, [...SCOPES], null, true);
      // An OAuth access token with random scopes and pins, by the real flow (register, consent, exchange).
      let oauthScopes = rng.subset(SCOPES, 0.5) as Scope[];
      if (oauthScopes.length === 0) oauthScopes = [rng.pick(SCOPES)];
      const oauthNarrowing = randomNarrowing(oauthScopes);
      const oauthPins = rng.chance(0.5) ? rng.subset(projectIds, 0.5) : [];
      const redirectUri = 'http://127.0.0.1:4999/cb';
      const client = await call(t.baseUrl, {
        method: 'POST',
        path: '/oauth/register',
        body: { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' },
      });
      expect(client.status).toBe(201);
      const verifier = randomBytes(32).toString('base64url');
      const consent = await b(u, 'POST', '/api/oauth/authorize', {
        clientId: client.json.client_id,
        redirectUri,
        codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
        codeChallengeMethod: 'S256',
        scope: SCOPES.join(' '),
        approve: true,
        scopes: oauthScopes,
        ...(oauthPins.length ? { projectIds: oauthPins } : {}),
        ...(oauthNarrowing.tools ? { tools: oauthNarrowing.tools } : {}),
        ...(oauthNarrowing.readOnly ? { readOnly: true } : {}),
      });
      expect(consent.status).toBe(200);
      const code = new URL(consent.json.data.redirectTo).searchParams.get('code')!;
      const issued = await call(t.baseUrl, {
        method: 'POST',
        path: '/oauth/token',
        contentType: 'application/x-www-form-urlencoded',
        rawBody: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          client_id: client.json.client_id,
          redirect_uri: redirectUri,
        }).toString(),
      });
      expect(issued.status).toBe(200);
      const grant = (await b(u, 'GET', '/api/oauth/grants?limit=1')).json.data.items[0];
      keys.push({
        id: grant.id,
        userId: u.id,
        scopes: oauthScopes,
        pins: oauthPins.length ? oauthPins : null,
        token: issued.json.access_token,
        marker: grant.clientName,
        revoked: false,
        spare: false,
        oauth: true,
        ...oauthNarrowing,
      });
    }

    // Project tokens: for members with editor+ in a project, sometimes.
    for (const project of projects.values()) {
      for (const u of users) {
        const role = project.members.get(u.id);
        if (!role || role === 'viewer' || rng.chance(0.4)) continue;
        const tokenRole = rng.pick<'editor' | 'viewer'>(['editor', 'viewer']);
        const res = await b(u, 'POST', `/api/projects/${project.id}/session-tokens`, {
          name: 'drill',
          role: tokenRole,
          expiresInMinutes: 120,
        });
        expect(res.status).toBe(201);
        projectTokens.push({
          id: res.json.data.id,
          userId: u.id,
          projectId: project.id,
          role: tokenRole,
          token: res.json.data.token,
        });
      }
    }
    // A token of each role, so every project-token path is always exercised.
    for (const role of ['editor', 'viewer'] as const) {
      const project = projects.get(projectIds[0])!;
      const res = await b(users[0], 'POST', `/api/projects/${project.id}/session-tokens`, {
        name: 'drill',
        role,
        expiresInMinutes: 120,
      });
      projectTokens.push({
        id: res.json.data.id,
        userId: users[0].id,
        projectId: project.id,
        role,
        token: res.json.data.token,
      });
    }
    for (const pt of projectTokens) tokenProjects.set(pt.id, pt.projectId);
    // And a key pinned to one project, so personal tasks and documents always meet a pinned caller.
    await makeKey(users[0], [...SCOPES], [projectIds[0]]);

    // Tasks and documents through each user's seed key.
    for (const u of users) {
      const key = seedKeys.get(u.id)!;
      const mine = projectIds.filter((id) => roleIn(u.id, id) !== null);
      for (let i = 0; i < 4; i++) {
        const m = marker('t');
        const project = mine.length > 0 && rng.chance(0.6) ? rng.pick(mine) : null;
        // Assignable: a member of the task's project, or the creator for a personal task.
        const assignee = rng.chance(0.5)
          ? project
            ? rng.pick([...projects.get(project)!.members.keys()])
            : u.id
          : null;
        const res = await call(t.baseUrl, {
          method: 'POST',
          path: '/api/v1/public/mcp/call',
          token: key.token,
          body: {
            name: 'create_task',
            arguments: { title: `task ${m}`, description: `secret ${m}`, project_id: project, assignee_id: assignee },
          },
        });
        expect(res.status).toBe(200);
        tasks.set(res.json.result.id, {
          id: res.json.result.id,
          marker: m,
          creator: u.id,
          assignee,
          project,
          deleted: false,
        });
      }
      const editable = projectIds.filter((id) => (roleIn(u.id, id) ?? 'viewer') !== 'viewer');
      for (let i = 0; i < 4; i++) {
        const m = marker('d');
        const project = editable.length > 0 && rng.chance(0.7) ? rng.pick(editable) : null;
        const isPublic = rng.chance(0.5);
        const res = await call(t.baseUrl, {
          method: 'POST',
          path: '/api/v1/public/mcp/call',
          token: key.token,
          body: {
            name: 'create_document',
            arguments: {
              title: `doc ${m}`,
              content: `# ${m}\n\nconfidential ${m} body`,
              project_id: project ?? '',
              is_public: isPublic,
            },
          },
        });
        expect(res.status).toBe(200);
        docs.set(res.json.result.id, {
          id: res.json.result.id,
          marker: m,
          author: u.id,
          project,
          isPublic,
          deleted: false,
        });
      }
    }
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    await t?.database.drop();
    await llm?.stop();
  });

  // ---- probes ------------------------------------------------------------------------------------
  const toolCall = (token: string | undefined, name: string, args: Record<string, unknown>): RawRequest => ({
    method: 'POST',
    path: '/api/v1/public/mcp/call',
    token,
    body: { name, arguments: args },
  });
  const anyTaskId = () => (rng.chance(0.1) ? randomUUID() : rng.pick([...tasks.keys()]));
  const anyDocId = () => (rng.chance(0.1) ? randomUUID() : rng.pick([...docs.keys()]));
  const anyProjectId = () => (rng.chance(0.1) ? randomUUID() : rng.pick([...projects.keys()]));
  const ok = (check?: Expectation['check'], apply?: Expectation['apply']): Expectation => ({
    statuses: [200],
    check,
    apply,
  });
  const fail = (status: number, ...codes: string[]): Expectation => ({
    statuses: [status],
    codes: codes.length ? codes : undefined,
  });

  /** A tool call by a valid, unrevoked key: the model's answer. */
  function toolProbe(k: MKey): Probe {
    const a = keyActor(k);
    const tool = rng.pick(Object.keys(TOOL_SCOPE));
    // The scope first, then the credential's own narrowing (allowlist, read-only): the order the doors check them in.
    const scoped = (expect: Expectation): Expectation =>
      !k.scopes.includes(TOOL_SCOPE[tool])
        ? fail(403, 'insufficient_scope')
        : (k.tools !== null && !k.tools.includes(tool)) || (k.readOnly && TOOL_SCOPE[tool].endsWith(':write'))
          ? fail(403, 'tool_not_allowed')
          : expect;
    let args: Record<string, unknown> = {};
    let expect: Expectation;
    switch (tool) {
      case 'list_tasks': {
        const project = rng.chance(0.4) ? anyProjectId() : '';
        args = { limit: 200, ...(project ? { project_id: project } : {}) };
        const want = [...tasks.values()]
          .filter((x) => taskVisible(a, x) && (!project || x.project === project))
          .map((x) => x.id);
        expect =
          project && !pinned(a, project)
            ? fail(404, 'not_found')
            : ok((body) => sameIds(body.result, want, 'list_tasks'));
        break;
      }
      case 'get_task': {
        const id = anyTaskId();
        args = { task_id: id };
        const task = tasks.get(id);
        expect =
          task && taskVisible(a, task)
            ? ok((body) => (body.result.id === id ? null : 'get_task: wrong id'))
            : fail(404, 'not_found');
        break;
      }
      case 'search_tasks': {
        const target = tasks.get(anyTaskId());
        args = { query: target ? target.marker : 'nothingmatchesthis', limit: 100 };
        const want = target && taskVisible(a, target) ? [target.id] : [];
        expect = ok((body) => sameIds(body.result, want, 'search_tasks', 100));
        break;
      }
      case 'task_stats': {
        const project = rng.chance(0.4) ? anyProjectId() : '';
        if (project) args = { project_id: project };
        const total = [...tasks.values()].filter(
          (x) => taskVisible(a, x) && (!project || x.project === project),
        ).length;
        expect =
          project && !pinned(a, project)
            ? fail(404, 'not_found')
            : ok((body) =>
                body.result.total === total ? null : `task_stats: total ${body.result.total}, model ${total}`,
              );
        break;
      }
      case 'create_task': {
        const m = marker('t');
        const project = rng.chance(0.5) ? anyProjectId() : null;
        const assignee = rng.chance(0.5) ? rng.pick(users).id : null;
        args = { title: `task ${m}`, description: `secret ${m}`, project_id: project, assignee_id: assignee };
        const allowed = project === null || effectiveRole({ userId: a.userId, pins: a.pins }, project) !== null;
        expect =
          project === null && a.pins !== null
            ? fail(400, 'invalid_argument')
            : allowed && !assignable(a, project, assignee)
              ? fail(400, 'invalid_argument')
              : allowed
                ? ok(
                    (body) => (body.result.creator_id === a.userId ? null : 'create_task: wrong creator'),
                    (body) =>
                      tasks.set(body.result.id, {
                        id: body.result.id,
                        marker: m,
                        creator: a.userId,
                        assignee,
                        project,
                        deleted: false,
                      }),
                  )
                : fail(404, 'not_found');
        break;
      }
      case 'update_task': {
        const id = anyTaskId();
        const task = tasks.get(id);
        const reassign = rng.chance(0.3);
        const assignee = rng.pick(users).id;
        args = reassign
          ? { task_id: id, assignee_id: assignee }
          : { task_id: id, status: rng.pick(['todo', 'in_progress', 'done']) };
        expect =
          task && taskVisible(a, task)
            ? reassign && !assignable(a, task.project, assignee)
              ? fail(400, 'invalid_argument')
              : ok(undefined, () => {
                  if (reassign) task.assignee = assignee;
                })
            : fail(404, 'not_found');
        break;
      }
      case 'delete_task': {
        const id = anyTaskId();
        const task = tasks.get(id);
        args = { task_id: id };
        // Deleting is rare so the pool stays interesting; a creator's delete is sometimes swapped for a get.
        if (!task || !taskVisible(a, task)) expect = fail(404, 'not_found');
        else if (task.creator !== a.userId) expect = fail(403, 'forbidden');
        else if (rng.chance(0.15)) expect = ok(undefined, () => (task.deleted = true));
        else return toolProbe(k);
        break;
      }
      case 'list_documents': {
        const project = rng.chance(0.5) ? anyProjectId() : '';
        args = { limit: 200, ...(project ? { project_id: project } : {}) };
        const want = [...docs.values()]
          .filter((d) => docVisible(a, d) && (!project || d.project === project))
          .map((d) => d.id);
        expect =
          project && effectiveRole(a, project) === null
            ? fail(404, 'not_found')
            : ok((body) => sameIds(body.result, want, 'list_documents'));
        break;
      }
      case 'get_document': {
        const id = anyDocId();
        const doc = docs.get(id);
        args = { document_id: id };
        expect =
          doc && docVisible(a, doc)
            ? ok((body) => {
                // An upload's text is extracted in the background: until then (uploaded/processing) it has none yet.
                const pending = ['uploaded', 'processing'].includes(body.result.status) && body.result.content == null;
                return body.result.id === id && (pending || String(body.result.content).includes(doc.marker))
                  ? null
                  : 'get_document: wrong document/content';
              })
            : fail(404, 'not_found');
        break;
      }
      case 'search_documents': {
        const target = docs.get(anyDocId());
        const project = rng.chance(0.3) ? anyProjectId() : '';
        args = {
          query: target ? `confidential ${target.marker}` : 'confidential',
          ...(project ? { project_id: project } : {}),
          limit: 50,
        };
        expect =
          project && effectiveRole(a, project) === null
            ? fail(404, 'not_found')
            : ok((body) => {
                if (!Array.isArray(body.result)) return 'search_documents: not an array';
                const bad = body.result.filter((hit: any) => {
                  const d = docs.get(hit.document_id);
                  return !d || !docVisible(a, d);
                });
                return bad.length
                  ? `search_documents returned invisible ${bad.map((h: any) => h.document_id).join(',')}`
                  : null;
              });
        break;
      }
      case 'create_document': {
        const m = marker('d');
        const project = rng.chance(0.6) ? anyProjectId() : '';
        const isPublic = rng.chance(0.5);
        args = {
          title: `doc ${m}`,
          content: `# ${m}\n\nconfidential ${m} body`,
          project_id: project,
          is_public: isPublic,
        };
        const role = project ? effectiveRole(a, project) : null;
        const add = (body: any) =>
          docs.set(body.result.id, {
            id: body.result.id,
            marker: m,
            author: a.userId,
            project: project || null,
            isPublic,
            deleted: false,
          });
        if (project)
          expect =
            role === null ? fail(404, 'not_found') : role === 'viewer' ? fail(403, 'forbidden') : ok(undefined, add);
        else expect = a.pins !== null ? fail(400, 'invalid_argument') : ok(undefined, add);
        break;
      }
      case 'update_document':
      case 'delete_document': {
        const id = anyDocId();
        const doc = docs.get(id);
        const isPublic = rng.chance(0.5);
        args = tool === 'update_document' ? { document_id: id, is_public: isPublic } : { document_id: id };
        const verdict = doc ? docChange(a, doc) : 404;
        if (verdict === 404) expect = fail(404, 'not_found');
        else if (verdict === 403) expect = fail(403, 'forbidden');
        else if (tool === 'update_document') expect = ok(undefined, () => (doc!.isPublic = isPublic));
        else if (rng.chance(0.15)) expect = ok(undefined, () => (doc!.deleted = true));
        else return toolProbe(k);
        break;
      }
      case 'list_repositories':
        expect = ok((body) =>
          Array.isArray(body.result) && body.result.length === 0 ? null : 'list_repositories: expected none registered',
        );
        break;
      default: {
        // No repository is registered in this drill: every repo is not_found, never a call upstream.
        args = { repo: rng.pick(['octo/hello', 'acme/private', 'a/b']) };
        if (tool === 'create_issue') args.title = 'drill';
        if (tool === 'create_issue_comment') Object.assign(args, { issue_number: 1, body: 'drill' });
        expect = fail(404, 'not_found');
      }
    }
    return {
      label: `A ${tool} ${k.oauth ? 'oauth' : 'key'}(${k.scopes.join('+')}${k.pins ? ` pins:${k.pins.length}` : ''}${k.tools ? ` tools:${k.tools.length}` : ''}${k.readOnly ? ' ro' : ''})`,
      request: toolCall(k.token, tool, args),
      expect: scoped(expect),
      viewer: a,
    };
  }

  function areaAProbe(): Probe {
    const roll = rng.next();
    const tool = rng.pick(Object.keys(TOOL_SCOPE));
    const dummy = { task_id: anyTaskId(), document_id: anyDocId() };
    if (roll < 0.04)
      return {
        label: 'A no credential',
        request: toolCall(undefined, tool, dummy),
        expect: fail(401, 'missing_api_key'),
        viewer: null,
      };
    if (roll < 0.08) {
      const u = rng.pick(users);
      return {
        label: 'A user JWT',
        request: toolCall(u.token, tool, dummy),
        expect: fail(401, 'invalid_api_key'),
        viewer: null,
      };
    }
    if (roll < 0.11) {
      const pt = rng.pick(projectTokens);
      return {
        label: 'A project token',
        request: toolCall(pt.token, tool, dummy),
        expect: fail(401, 'invalid_api_key'),
        viewer: null,
      };
    }
    if (roll < 0.13) {
      return {
        label: 'A forged key',
        request: toolCall(`atr_${rng.hex(38)}`, tool, dummy),
        expect: fail(401, 'invalid_api_key'),
        viewer: null,
      };
    }
    const k = rng.pick(keys);
    if (k.revoked)
      return {
        label: 'A revoked key',
        request: toolCall(k.token, tool, dummy),
        expect: fail(401, 'revoked_api_key'),
        viewer: null,
      };
    return toolProbe(k);
  }

  function areaBProbe(): Probe {
    const roll = rng.next();
    type Cred =
      | { kind: 'user'; u: TestUser }
      | { kind: 'ptoken'; pt: MProjectToken }
      | { kind: 'key'; k: MKey }
      | { kind: 'none' };
    const cred: Cred =
      roll < 0.68
        ? { kind: 'user', u: rng.pick(users) }
        : roll < 0.9
          ? { kind: 'ptoken', pt: rng.pick(projectTokens) }
          : roll < 0.95
            ? { kind: 'key', k: rng.pick(keys) }
            : { kind: 'none' };
    const token =
      cred.kind === 'user'
        ? cred.u.token
        : cred.kind === 'ptoken'
          ? cred.pt.token
          : cred.kind === 'key'
            ? cred.k.token
            : undefined;
    const actor: Actor | null =
      cred.kind === 'user' ? userActor(cred.u) : cred.kind === 'ptoken' ? tokenActor(cred.pt) : null;
    const route = rng.pick([
      'me',
      'projects',
      'project',
      'patch',
      'member',
      'mint',
      'ptokens',
      'ptokdel',
      'docs',
      'doc',
      'docdel',
      'upload',
      'keys',
      'key',
      'keydel',
      'keyroll',
      'policy',
    ]);
    const req = (method: string, path: string, body?: unknown): RawRequest => ({ method, path, token, body });
    const probe = (request: RawRequest, expect: Expectation): Probe => ({
      label: `B ${route} ${cred.kind}`,
      request,
      expect,
      viewer: actor,
    });
    // Credentials that never work on Area B.
    const wrongKind =
      cred.kind === 'none' ? fail(401, 'AUTH_REQUIRED') : cred.kind === 'key' ? fail(401, 'AUTH_INVALID') : null;
    const userOnly = (expect: Expectation) =>
      wrongKind ?? (cred.kind === 'ptoken' ? fail(401, 'AUTH_INVALID') : expect);
    const a = actor!;

    switch (route) {
      case 'me':
        return probe(
          req('GET', '/api/auth/me'),
          userOnly(ok((body) => (body.data.id === a?.userId ? null : 'me: wrong user'))),
        );
      case 'projects': {
        const want = [...projects.values()].filter((p) => a && p.members.has(a.userId)).map((p) => p.id);
        return probe(
          req('GET', '/api/projects?limit=200'),
          userOnly(ok((body) => sameIds(body.data.items, want, 'GET /api/projects'))),
        );
      }
      case 'project': {
        const id = anyProjectId();
        const request = req('GET', `/api/projects/${id}`);
        if (wrongKind) return probe(request, wrongKind);
        if (cred.kind === 'ptoken' && id !== cred.pt.projectId) return probe(request, fail(401, 'AUTH_INVALID'));
        const role = effectiveRole(a, id);
        return probe(
          request,
          role === null
            ? fail(404, 'NOT_FOUND')
            : ok((body) =>
                body.data.id === id && body.data.role === role
                  ? null
                  : `project: role ${body.data.role}, model ${role}`,
              ),
        );
      }
      case 'patch': {
        const id = anyProjectId();
        const role = a ? effectiveRole(a, id) : null;
        return probe(
          req('PATCH', `/api/projects/${id}`, { description: `changed by drill ${rng.hex(4)}` }),
          userOnly(role === null ? fail(404, 'NOT_FOUND') : role === 'viewer' ? fail(403, 'FORBIDDEN') : ok()),
        );
      }
      case 'member': {
        const id = anyProjectId();
        const target = rng.pick(users);
        const newRole = rng.pick<Role>(['owner', 'editor', 'viewer']);
        const role = a ? effectiveRole(a, id) : null;
        const project = projects.get(id);
        let expect: Expectation;
        if (role === null) expect = fail(404, 'NOT_FOUND');
        else if (role !== 'owner') expect = fail(403, 'FORBIDDEN');
        else if (project!.ownerId === target.id && newRole !== 'owner') expect = fail(409, 'STATE_CONFLICT');
        else expect = { statuses: [200, 201], apply: () => project!.members.set(target.id, newRole) };
        return probe(
          req('POST', `/api/projects/${id}/members`, { userId: target.id, role: newRole }),
          userOnly(expect),
        );
      }
      case 'mint': {
        const id = anyProjectId();
        const role = a ? effectiveRole(a, id) : null;
        return probe(
          req('POST', `/api/projects/${id}/session-tokens`, { name: 'drill', role: 'viewer', expiresInMinutes: 5 }),
          userOnly(
            role === null
              ? fail(404, 'NOT_FOUND')
              : role === 'viewer'
                ? fail(403, 'FORBIDDEN')
                : { statuses: [201], apply: (body: any) => tokenProjects.set(body.data.id, id) },
          ),
        );
      }
      case 'ptokens': {
        // The project's live tokens: all of the project's and only them, never a secret (forbiddenFor checks that).
        const id = anyProjectId();
        const role = a ? effectiveRole(a, id) : null;
        const check = (body: any) => {
          const got: string[] = body.data.items.map((item: { id: string }) => item.id);
          const foreign = got.filter((tokenId) => tokenProjects.get(tokenId) !== id);
          const missing = projectTokens.filter((pt) => pt.projectId === id && !got.includes(pt.id));
          if (body.data.items.some((item: Record<string, unknown>) => 'token' in item || 'tokenHash' in item))
            return 'session tokens: an item carries a secret field';
          return foreign.length || missing.length
            ? `session tokens of ${id}: foreign [${foreign.join(',')}], missing [${missing.map((pt) => pt.id).join(',')}]`
            : null;
        };
        return probe(
          req('GET', `/api/projects/${id}/session-tokens?limit=200`),
          userOnly(role === null ? fail(404, 'NOT_FOUND') : role === 'viewer' ? fail(403, 'FORBIDDEN') : ok(check)),
        );
      }
      case 'ptokdel': {
        // Revoking another project's token (or an unknown id) through this project: 404, and the token keeps working
        // (the drill's other calls with it would then fail).
        const id = anyProjectId();
        const other = projectTokens.filter((pt) => pt.projectId !== id);
        const tokenId = other.length > 0 && rng.chance(0.8) ? rng.pick(other).id : randomUUID();
        const role = a ? effectiveRole(a, id) : null;
        return probe(
          req('DELETE', `/api/projects/${id}/session-tokens/${tokenId}`),
          userOnly(
            role === null
              ? fail(404, 'NOT_FOUND')
              : role === 'viewer'
                ? fail(403, 'FORBIDDEN')
                : fail(404, 'NOT_FOUND'),
          ),
        );
      }
      case 'docs': {
        const id = anyProjectId();
        const request = req('GET', `/api/documents?projectId=${id}&limit=200`);
        if (wrongKind) return probe(request, wrongKind);
        if (cred.kind === 'ptoken' && id !== cred.pt.projectId) return probe(request, fail(401, 'AUTH_INVALID'));
        const want = [...docs.values()].filter((d) => d.project === id && docVisible(a, d)).map((d) => d.id);
        return probe(
          request,
          effectiveRole(a, id) === null
            ? fail(404, 'NOT_FOUND')
            : ok((body) => sameIds(body.data.items, want, 'GET /api/documents')),
        );
      }
      case 'doc': {
        const id = anyDocId();
        const doc = docs.get(id);
        const request = req('GET', `/api/documents/${id}`);
        if (wrongKind) return probe(request, wrongKind);
        if (doc && docVisible(a, doc))
          return probe(
            request,
            ok((body) => (body.data.id === id ? null : 'doc: wrong id')),
          );
        // A project token asking for another project's document: not found, or refused as the wrong token.
        return probe(
          request,
          cred.kind === 'ptoken'
            ? { statuses: [401, 404], codes: ['AUTH_INVALID', 'NOT_FOUND'] }
            : fail(404, 'NOT_FOUND'),
        );
      }
      case 'docdel': {
        const id = anyDocId();
        const doc = docs.get(id);
        const request = req('DELETE', `/api/documents/${id}`);
        if (wrongKind) return probe(request, wrongKind);
        const verdict = doc ? docChange(a, doc) : 404;
        if (verdict === 404)
          return probe(
            request,
            cred.kind === 'ptoken'
              ? { statuses: [401, 404], codes: ['AUTH_INVALID', 'NOT_FOUND'] }
              : fail(404, 'NOT_FOUND'),
          );
        if (verdict === 403) return probe(request, fail(403, 'FORBIDDEN'));
        if (!rng.chance(0.15)) return areaBProbe();
        return probe(
          request,
          ok(undefined, () => (doc!.deleted = true)),
        );
      }
      case 'upload': {
        const id = anyProjectId();
        const m = marker('d');
        const isPublic = rng.chance(0.5);
        const form = new FormData();
        form.set('projectId', id);
        form.set('isPublic', String(isPublic));
        form.set('title', `upload ${m}`);
        form.set('file', new Blob([`confidential ${m} uploaded ${rng.hex(8)}`], { type: 'text/plain' }), `${m}.txt`);
        const request: RawRequest = { method: 'POST', path: '/api/documents/upload', token, rawBody: form };
        if (wrongKind) return probe(request, wrongKind);
        if (cred.kind === 'ptoken' && id !== cred.pt.projectId) return probe(request, fail(401, 'AUTH_INVALID'));
        const role = effectiveRole(a, id);
        const add = (body: any) =>
          docs.set(body.data.id, {
            id: body.data.id,
            marker: m,
            author: a.userId,
            project: id,
            isPublic,
            deleted: false,
          });
        return probe(
          request,
          role === null
            ? fail(404, 'NOT_FOUND')
            : role === 'viewer'
              ? fail(403, 'FORBIDDEN')
              : { statuses: [201], apply: add },
        );
      }
      case 'keys': {
        const want = apiKeys()
          .filter((k) => a && k.userId === a.userId)
          .map((k) => k.id);
        return probe(
          req('GET', '/api/api-keys?limit=200'),
          userOnly(ok((body) => sameIds(body.data.items, want, 'GET /api/api-keys'))),
        );
      }
      case 'key': {
        const k = rng.chance(0.1) ? null : rng.pick(apiKeys());
        const id = k?.id ?? randomUUID();
        return probe(
          req('GET', `/api/api-keys/${id}`),
          userOnly(
            k && a && k.userId === a.userId
              ? ok((body) => (body.data.id === id ? null : 'key: wrong id'))
              : fail(404, 'NOT_FOUND'),
          ),
        );
      }
      case 'keyroll': {
        // Rolling another user's key: 404 as for a key that does not exist, and nothing is rolled (its next call
        // works, the model's probes of it go on). One's own keys are left alone: a roll changes the model.
        const k = rng.pick(apiKeys());
        if (a && k.userId === a.userId) return areaBProbe();
        return probe(
          req('POST', `/api/api-keys/${k.id}/roll`, { overlap: rng.pick(['1h', '24h', '7d']) }),
          userOnly(fail(404, 'NOT_FOUND')),
        );
      }
      case 'policy': {
        // Only an admin reads the policy; nobody in the drill may change it (a member's PUT would lock everyone out).
        const isAdmin = cred.kind === 'user' && cred.u.role === 'admin';
        if (isAdmin || rng.chance(0.5))
          return probe(
            req('GET', rng.chance(0.5) ? '/api/admin/policy' : '/api/admin/api-keys/out-of-policy'),
            userOnly(isAdmin ? ok() : fail(403, 'FORBIDDEN')),
          );
        return probe(
          req('PUT', '/api/admin/policy', {
            maxKeyLifetimeDays: 1,
            allowedKeyScopes: null,
            requireConfirmWritesForWriteScopes: true,
            allowedIps: ['192.0.2.0/24'],
            allowedOAuthClients: [],
            maxCredentialsPerUser: 1,
          }),
          userOnly(fail(403, 'FORBIDDEN')),
        );
      }
      default: {
        // Revoke: other users' keys (must be 404, and must not revoke), or one's own spare key.
        const k = rng.pick(apiKeys());
        const mineAndSpare = a && k.userId === a.userId;
        if (mineAndSpare && !k.spare) return areaBProbe();
        return probe(
          req('DELETE', `/api/api-keys/${k.id}`),
          userOnly(mineAndSpare ? ok(undefined, () => (k.revoked = true)) : fail(404, 'NOT_FOUND')),
        );
      }
    }
  }

  it(
    'no leaks, no wrong 2xx, no 500s across random calls with every kind of credential',
    async () => {
      const deadline = Date.now() + seconds * 1000;
      const stats = {
        calls: 0,
        leaks: 0,
        wrong2xx: 0,
        wrongStatus: 0,
        wrongResult: 0,
        s500: 0,
        internals: 0,
        byStatus: new Map<number, number>(),
      };
      const problems: string[] = [];
      const note = (what: string, probe: Probe, res: RawResponse) => {
        if (problems.length < 40)
          problems.push(
            `${what} | ${probe.label} | ${probe.request.method} ${probe.request.path} ${excerpt(JSON.stringify(probe.request.body ?? ''), 200)} → ${res.status} ${excerpt(res.text, 300)}`,
          );
      };

      while (stats.calls < maxCalls && Date.now() < deadline) {
        const probe = rng.chance(0.6) ? areaAProbe() : areaBProbe();
        const forbidden = forbiddenFor(probe.viewer);
        const res = await call(t.baseUrl, probe.request);
        stats.calls += 1;
        stats.byStatus.set(res.status, (stats.byStatus.get(res.status) ?? 0) + 1);
        const sent = `${probe.request.path} ${JSON.stringify(probe.request.body ?? '')}`;
        const leaked = forbidden.filter((s) => res.text.includes(s) && !sent.includes(s));
        if (leaked.length) {
          stats.leaks += 1;
          note(`LEAK ${leaked.slice(0, 3).join(',')}`, probe, res);
        }
        if (res.status >= 500) {
          stats.s500 += 1;
          note('5xx', probe, res);
        }
        const internals = internalsIn(res.text);
        if (internals) {
          stats.internals += 1;
          note(`internals "${internals}"`, probe, res);
        }
        const expected = probe.expect;
        if (!expected.statuses.includes(res.status)) {
          if (res.status >= 200 && res.status < 300) {
            stats.wrong2xx += 1;
            note(`WRONG 2xx (model: ${expected.statuses})`, probe, res);
          } else if (res.status < 500) {
            stats.wrongStatus += 1;
            note(`wrong status (model: ${expected.statuses})`, probe, res);
          }
          continue;
        }
        if (res.status >= 300) {
          const code = res.json?.error?.code;
          if (expected.codes && !expected.codes.includes(code)) {
            stats.wrongStatus += 1;
            note(`wrong code ${code} (model: ${expected.codes})`, probe, res);
          }
          continue;
        }
        const problem = expected.check?.(res.json) ?? null;
        if (problem) {
          stats.wrongResult += 1;
          note(`wrong result: ${problem}`, probe, res);
        }
        expected.apply?.(res.json);
      }

      const summary =
        `drill-isolation seed=${seed}: calls probed=${stats.calls}, leaks=${stats.leaks}, wrong 2xx=${stats.wrong2xx}, 500s=${stats.s500}, ` +
        `other wrong status/code=${stats.wrongStatus}, wrong results=${stats.wrongResult}, internals in body=${stats.internals}; ` +
        `statuses ${JSON.stringify(Object.fromEntries([...stats.byStatus].sort()))}; tasks=${tasks.size} docs=${docs.size} keys=${keys.length} project tokens=${projectTokens.length}`;
      // eslint-disable-next-line no-console
      console.log([summary, ...problems].join('\n'));
      expect(problems).toEqual([]);
      expect(stats.calls).toBeGreaterThanOrEqual(200);
      if (t.database.kind === 'postgres') {
        // The documents went through pending segments (the setting above), not around them.
        const [opened] = (await t.app
          .get(DatabasePool)
          .query(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END::int AS n FROM rag_segments_id_seq`)) as {
          n: number;
        }[];
        expect(opened.n).toBeGreaterThan(0);
      }
    },
    (seconds + 120) * 1000,
  );

  /**
   * Agent runs are pinned callers too: a run started in a project (by a user or a project token of either role)
   * asks, through a scripted model, for the starter's personal tasks and documents and to change them. The
   * run's answer must hold nothing the run's actor may not see, and nothing outside the project may change.
   */
  it('agent runs reach nothing outside their project, whoever started them', async () => {
    const starters: { label: string; token: string; userId: string; projectId: string; cap?: 'editor' | 'viewer' }[] =
      projectTokens.map((pt) => ({
        label: `project token (${pt.role})`,
        token: pt.token,
        userId: pt.userId,
        projectId: pt.projectId,
        cap: pt.role,
      }));
    for (const project of projects.values()) {
      const owner = users.find((u) => u.id === project.ownerId)!;
      starters.push({ label: 'user', token: owner.token, userId: owner.id, projectId: project.id });
    }
    const problems: string[] = [];
    let runs = 0;
    for (const starter of starters) {
      const personalTask = [...tasks.values()].find(
        (x) => !x.deleted && x.creator === starter.userId && x.project === null,
      );
      const otherTask = [...tasks.values()].find(
        (x) => !x.deleted && x.creator === starter.userId && x.project !== null && x.project !== starter.projectId,
      );
      const personalDoc = [...docs.values()].find(
        (d) => !d.deleted && d.author === starter.userId && d.project === null,
      );
      const searchedDoc = [...docs.values()].find(
        (d) => !d.deleted && d.author === starter.userId && d.project !== starter.projectId && d !== personalDoc,
      );
      const calls = [
        { name: 'list_tasks', arguments: { limit: 200 } },
        { name: 'task_stats', arguments: {} },
        { name: 'list_documents', arguments: { limit: 200 } },
        ...(personalTask
          ? [
              { name: 'get_task', arguments: { task_id: personalTask.id } },
              { name: 'update_task', arguments: { task_id: personalTask.id, title: 'hijacked' } },
              { name: 'delete_task', arguments: { task_id: personalTask.id } },
            ]
          : []),
        ...(otherTask ? [{ name: 'get_task', arguments: { task_id: otherTask.id } }] : []),
        ...(personalDoc
          ? [
              { name: 'get_document', arguments: { document_id: personalDoc.id } },
              { name: 'delete_document', arguments: { document_id: personalDoc.id } },
            ]
          : []),
        ...(searchedDoc
          ? [{ name: 'search_documents', arguments: { query: `confidential ${searchedDoc.marker}`, limit: 50 } }]
          : []),
        { name: 'create_task', arguments: { title: 'agent personal task' } },
      ];
      llm.play({ toolCalls: calls }, { content: 'Done.' });
      const started = await call(t.baseUrl, {
        method: 'POST',
        path: '/api/agent/execute',
        token: starter.token,
        body: { projectId: starter.projectId, input: 'Collect everything.', maxSteps: 20, approval: 'none' },
      });
      if (started.status !== 202) {
        problems.push(`${starter.label}: execute → ${started.status} ${excerpt(started.text)}`);
        continue;
      }
      const jobId = started.json.data.jobId as string;
      const status: RawResponse = await pollUntil(
        `${starter.label}: run ${jobId} final`,
        () => call(t.baseUrl, { method: 'GET', path: `/api/agent/status/${jobId}`, token: starter.token }),
        (res) => ['succeeded', 'failed', 'cancelled'].includes(res.json?.data?.status),
        { timeoutMs: 120_000 },
      );
      runs += 1;
      const runActor: Actor = { userId: starter.userId, pins: [starter.projectId], cap: starter.cap };
      const sent = JSON.stringify(calls);
      const leaked = forbiddenFor(runActor).filter((secret) => status!.text.includes(secret) && !sent.includes(secret));
      if (!['succeeded', 'failed'].includes(status!.json?.data?.status))
        problems.push(`${starter.label}: run ended ${status!.json?.data?.status}`);
      if (leaked.length)
        problems.push(`${starter.label}: LEAK ${leaked.slice(0, 3).join(',')} in ${excerpt(status!.text, 400)}`);
      // Nothing outside the project changed: the personal task and document are as they were, no personal task was made.
      const seedKey = keys.find(
        (k) =>
          k.userId === starter.userId && k.pins === null && k.scopes.length === SCOPES.length && !k.spare && !k.revoked,
      );
      if (seedKey && personalTask) {
        const task = await call(t.baseUrl, toolCall(seedKey.token, 'get_task', { task_id: personalTask.id }));
        if (task.status !== 200 || task.json.result.title !== `task ${personalTask.marker}`)
          problems.push(`${starter.label}: personal task changed: ${excerpt(task.text)}`);
      }
      if (seedKey && personalDoc) {
        const doc = await call(
          t.baseUrl,
          toolCall(seedKey.token, 'get_document', { document_id: personalDoc.id, include_content: false }),
        );
        if (doc.status !== 200) problems.push(`${starter.label}: personal document gone: ${excerpt(doc.text)}`);
      }
      if (seedKey) {
        const made = await call(
          t.baseUrl,
          toolCall(seedKey.token, 'search_tasks', { query: 'agent personal task', limit: 100 }),
        );
        const personal = (made.json?.result ?? []).filter((x: { project_id: string | null }) => x.project_id === null);
        if (personal.length) problems.push(`${starter.label}: the run created a personal task`);
      }
    }
    // eslint-disable-next-line no-console
    console.log(
      `drill-isolation agent runs: ${runs} runs (${projectTokens.length} by project tokens), problems=${problems.length}`,
    );
    expect(problems).toEqual([]);
    expect(runs).toBeGreaterThanOrEqual(projectTokens.length);
  }, 600_000);
});
