import { Client } from 'pg';
import { ToolsService } from '../src/modules/tools/tools.service.js';
import { bearer, makeApiKey, makeUser, type ApiKeyOptions, type TestUser } from './support/factories.js';
import { FakeGithubServer, seedWidgets } from './support/fake-github-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const SERVER_TOKEN = 'ghp_server0000000000000000000000000000';
const ACME_TOKEN = 'ghp_acmeRepoToken1111111111111111111111';

describe('GitHub: admin-registered repositories and the GitHub tools', () => {
  let app: TestApp;
  let github: FakeGithubServer;
  let admin: TestUser;
  let member: TestUser;
  let readWriteKey: string;

  const call = (key: string, name: string, args?: Record<string, unknown>) =>
    app.http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key))
      .send(args === undefined ? { name } : { name, arguments: args });

  async function makeKey(
    user: TestUser,
    scopes: string[],
    pins: Pick<ApiKeyOptions, 'projectIds' | 'repos'> = {},
  ): Promise<string> {
    return (await makeApiKey(app, user, { name: `key-${scopes.join('-')}`, scopes, ...pins })).key;
  }

  async function register(body: Record<string, unknown>, expected = 201) {
    return app.http.post('/api/admin/github/repos').set(bearer(admin.token)).send(body).expect(expected);
  }

  beforeAll(async () => {
    github = await FakeGithubServer.start();
    app = await startTestApp({
      env: {
        GITHUB_API_URL: github.baseUrl,
        GITHUB_TOKEN: SERVER_TOKEN,
        GITHUB_TIMEOUT_MS: '1000',
        GITHUB_MAX_RETRIES: '1',
      },
    });
    admin = await makeUser(app);
    member = await makeUser(app);
    expect(admin.role).toBe('admin');

    seedWidgets(github);
    github.grant(ACME_TOKEN, ['acme/widgets'], { write: true });
    github.addRepo('acme', 'public-docs', { description: null });
    github.grant(SERVER_TOKEN, ['acme/public-docs'], { write: false });

    await register({ owner: 'acme', name: 'widgets', token: ACME_TOKEN });
    await register({ owner: 'acme', name: 'public-docs' });
    readWriteKey = await makeKey(member, ['github:read', 'github:write']);
  });

  afterAll(async () => {
    await app?.close();
    await github?.stop();
  });

  beforeEach(() => {
    github.maxPerPage = 100;
    github.clearFixture();
    github.requests.length = 0;
  });

  describe('admin routes', () => {
    it('are admin-only: a member gets 403 FORBIDDEN, no token 401', async () => {
      const list = await app.http.get('/api/admin/github/repos').set(bearer(member.token)).expect(403);
      expect(list.body.error.code).toBe('FORBIDDEN');
      await app.http
        .post('/api/admin/github/repos')
        .set(bearer(member.token))
        .send({ owner: 'acme', name: 'x' })
        .expect(403);
      await app.http
        .delete('/api/admin/github/repos/5b1d2a9e-2f4e-4b8e-9a41-0c6a1b2c3d4e')
        .set(bearer(member.token))
        .expect(403);
      await app.http.get('/api/admin/github/repos').expect(401);
      expect(github.requests).toHaveLength(0);
    });

    it('registers after checking with GitHub using the given token, and never returns it', async () => {
      github.addRepo('acme', 'gadgets', { defaultBranch: 'develop' });
      github.grant('ghp_gadgets', ['acme/gadgets']);
      const res = await register({ owner: 'acme', name: 'gadgets', token: 'ghp_gadgets' });
      expect(res.body.data).toMatchObject({
        id: expect.any(String),
        fullName: 'acme/gadgets',
        defaultBranch: 'develop',
        tokenSource: 'repository',
      });
      expect(JSON.stringify(res.body)).not.toContain('ghp_gadgets');
      expect(github.requests).toEqual([
        expect.objectContaining({ method: 'GET', path: '/repos/acme/gadgets', authorization: 'token ghp_gadgets' }),
      ]);
    });

    it("uses the server's GITHUB_TOKEN when no token is given", async () => {
      const list = await app.http.get('/api/admin/github/repos').set(bearer(admin.token)).expect(200);
      const publicDocs = list.body.data.items.find((r: { fullName: string }) => r.fullName === 'acme/public-docs');
      expect(publicDocs).toMatchObject({ tokenSource: 'server', defaultBranch: 'main', description: null });
      expect(list.body.data.nextCursor).toBeNull();
      expect(JSON.stringify(list.body)).not.toMatch(/ghp_|token_?ciphertext/i);
    });

    it('answers 409 CONFLICT for a duplicate, case-insensitively, without calling GitHub', async () => {
      const res = await register({ owner: 'ACME', name: 'Widgets', token: ACME_TOKEN }, 409);
      expect(res.body.error.code).toBe('CONFLICT');
      expect(github.requests).toHaveLength(0);
    });

    it.each([
      [
        { owner: 'acme', name: 'nope', token: ACME_TOKEN },
        /does not exist on GitHub or the token cannot see it \(GitHub 404\)/,
      ],
      [{ owner: 'acme', name: 'widgets-2', token: 'ghp_unknown' }, /rejected the token \(HTTP 401\)/],
    ])('answers 400 VALIDATION_FAILED with the reason when GitHub refuses %j', async (body, reason) => {
      github.addRepo('acme', 'widgets-2');
      const res = await register(body, 400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
      expect(res.body.error.message).toMatch(reason);
      expect(JSON.stringify(res.body)).not.toContain('ghp_unknown');
    });

    it('answers 400 when GitHub is unreachable or keeps failing', async () => {
      github.addRepo('acme', 'flaky');
      github.grant('ghp_flaky', ['acme/flaky']);
      github.failNext({ status: 503, body: { message: 'Service Unavailable' }, times: 2 });
      const res = await register({ owner: 'acme', name: 'flaky', token: 'ghp_flaky' }, 400);
      expect(res.body.error.message).toMatch(/GitHub answered HTTP 503/);
      expect(github.requests).toHaveLength(2); // one retry

      github.failNext({ status: 200, delayMs: 2500, times: 2 });
      const slow = await register({ owner: 'acme', name: 'flaky', token: 'ghp_flaky' }, 400);
      expect(slow.body.error.message).toMatch(/did not answer within 1000 ms/);
    });

    it('answers 429 RATE_LIMITED with Retry-After when GitHub rate-limits the check (Area B details in camelCase)', async () => {
      github.addRepo('acme', 'throttled');
      github.grant('ghp_throttled', ['acme/throttled']);
      github.failNext(FakeGithubServer.secondaryRateLimit(90, 429));
      const res = await register({ owner: 'acme', name: 'throttled', token: 'ghp_throttled' }, 429);
      expect(res.body.error).toMatchObject({
        code: 'RATE_LIMITED',
        details: { upstream: 'github', upstreamStatus: 429 },
      });
      expect(res.headers['retry-after']).toBe('90');
      // Nothing was registered; once GitHub answers, the same registration works.
      await register({ owner: 'acme', name: 'throttled', token: 'ghp_throttled' });
    });

    it('validates the body', async () => {
      for (const body of [
        { name: 'x' },
        { owner: 'acme' },
        { owner: 'ac me', name: 'x' },
        { owner: 'acme', name: 'a/b' },
        { owner: 'acme', name: 'x', token: '' },
        { owner: 'acme', name: 'x', extra: 1 },
      ]) {
        const res = await register(body, 400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
      }
      expect(github.requests).toHaveLength(0);
    });

    it('stores the token encrypted: the plaintext is nowhere in the row', async () => {
      const db = new Client({ connectionString: app.database.url });
      await db.connect();
      try {
        const { rows } = await db.query(
          `SELECT row_to_json(r)::text AS json, token_ciphertext FROM github_repositories r WHERE lower(full_name) = 'acme/widgets'`,
        );
        expect(rows).toHaveLength(1);
        expect(rows[0].json).not.toContain(ACME_TOKEN);
        expect(rows[0].json).not.toContain(Buffer.from(ACME_TOKEN).toString('base64'));
        expect(rows[0].token_ciphertext).toMatch(/^v1\./);
        const all = await db.query(`SELECT string_agg(row_to_json(r)::text, '') AS dump FROM github_repositories r`);
        expect(all.rows[0].dump).not.toContain('ghp_');
      } finally {
        await db.end();
      }
    });

    it('deletes: 200, then 404; a malformed id is 400; the tools stop reaching it', async () => {
      github.addRepo('acme', 'temp');
      github.grant('ghp_temp', ['acme/temp']);
      const created = await register({ owner: 'acme', name: 'temp', token: 'ghp_temp' });
      const id = created.body.data.id as string;
      expect((await call(readWriteKey, 'list_issues', { repo: 'acme/temp' })).status).toBe(200);
      const del = await app.http.delete(`/api/admin/github/repos/${id}`).set(bearer(admin.token)).expect(200);
      expect(del.body.data).toEqual({ id, deleted: true });
      await app.http.delete(`/api/admin/github/repos/${id}`).set(bearer(admin.token)).expect(404);
      await app.http.delete('/api/admin/github/repos/not-a-uuid').set(bearer(admin.token)).expect(400);
      github.requests.length = 0;
      const gone = await call(readWriteKey, 'list_issues', { repo: 'acme/temp' }).expect(404);
      expect(gone.body.error.code).toBe('not_found');
      expect(github.requests).toHaveLength(0);
    });
  });

  describe('tools', () => {
    it('are in the catalog with their scopes and openWorldHint', async () => {
      const readOnly = await makeKey(member, ['github:read']);
      const res = await app.http.get('/api/v1/public/mcp/tools').set(bearer(readOnly)).expect(200);
      expect(res.body.tools.map((t: { name: string }) => t.name)).toEqual([
        'list_repositories',
        'list_commits',
        'list_issues',
        'list_pull_requests',
        'list_workflow_runs',
      ]);
      const listCommits = res.body.tools.find((t: { name: string }) => t.name === 'list_commits');
      expect(listCommits.parameters).toMatchObject({
        repo: { type: 'str', required: true },
        branch: { type: 'str', default: '' },
        since: { type: 'date', default: '' },
        limit: { type: 'int', default: 30, minimum: 1, maximum: 100 },
      });
      const tools = app.app.get(ToolsService);
      for (const name of [
        'list_repositories',
        'list_commits',
        'list_issues',
        'list_pull_requests',
        'list_workflow_runs',
      ]) {
        expect(tools.schemaView(tools.find(name)!)).toMatchObject({
          scope: 'github:read',
          annotations: { readOnlyHint: true, openWorldHint: true },
        });
      }
      for (const name of ['create_issue', 'create_issue_comment']) {
        expect(tools.schemaView(tools.find(name)!)).toMatchObject({
          scope: 'github:write',
          annotations: { readOnlyHint: false, openWorldHint: true },
        });
      }
      expect(tools.schemaView(tools.find('create_issue_comment')!).inputSchema).toMatchObject({
        required: ['repo', 'issue_number', 'body'],
      });
      const write = await call(readOnly, 'create_issue', { repo: 'acme/widgets', title: 'x' }).expect(403);
      expect(write.body.error).toMatchObject({
        code: 'insufficient_scope',
        details: { required_scope: 'github:write' },
      });
    });

    it('through the door: list results say X-Truncated, arguments are checked before GitHub is called', async () => {
      github.maxPerPage = 2;
      const four = await call(readWriteKey, 'list_commits', { repo: 'acme/widgets', limit: 4 }).expect(200);
      expect(four.body.result.map((c: { message: string }) => c.message)).toEqual([
        'commit 5',
        'commit 4',
        'commit 3',
        'commit 2',
      ]);
      expect(four.headers['x-truncated']).toBe('true');
      const all = await call(readWriteKey, 'list_commits', { repo: 'acme/widgets', limit: '50' }).expect(200);
      expect(all.body.result).toHaveLength(5);
      expect(all.headers['x-truncated']).toBeUndefined();
      github.requests.length = 0;

      const badDate = await call(readWriteKey, 'list_commits', { repo: 'acme/widgets', since: '2026-02-30' }).expect(
        400,
      );
      expect(badDate.body.error).toMatchObject({ code: 'invalid_argument', details: { argument: 'since' } });
      const badState = await call(readWriteKey, 'list_issues', { repo: 'acme/widgets', state: 'merged' }).expect(400);
      expect(badState.body.error).toMatchObject({
        code: 'invalid_argument',
        details: { argument: 'state', allowed: ['open', 'closed', 'all'] },
      });
      const missing = await call(readWriteKey, 'create_issue_comment', {
        repo: 'acme/widgets',
        issue_number: 8,
      }).expect(400);
      expect(missing.body.error).toMatchObject({ code: 'missing_argument', details: { argument: 'body' } });
      const blank = await call(readWriteKey, 'create_issue', { repo: 'acme/widgets', title: '   ' }).expect(400);
      expect(blank.body.error).toMatchObject({ code: 'invalid_argument', details: { argument: 'title' } });
      expect(github.requests).toHaveLength(0);
    });

    it('create_issue with an Idempotency-Key creates one issue for a repeated call', async () => {
      const send = () =>
        app.http
          .post('/api/v1/public/mcp/call')
          .set(bearer(readWriteKey))
          .set('Idempotency-Key', 'gh-issue-once')
          .send({ name: 'create_issue', arguments: { repo: 'acme/widgets', title: 'Only once' } })
          .expect(200);
      const first = await send();
      const second = await send();
      expect(second.body).toEqual(first.body);
      expect(github.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    });

    it('an unregistered or pinned-out repo is not_found without calling GitHub', async () => {
      github.addRepo('acme', 'secret');
      github.grant('ghp_secret', ['acme/secret']);
      const unregistered = await call(readWriteKey, 'list_commits', { repo: 'acme/secret' }).expect(404);
      expect(unregistered.body.error.code).toBe('not_found');
      const pinned = await makeKey(member, ['github:read', 'github:write'], { repos: ['acme/public-docs'] });
      const out = await call(pinned, 'list_issues', { repo: 'ACME/widgets' }).expect(404);
      expect(out.body.error.code).toBe('not_found');
      await call(pinned, 'create_issue', { repo: 'acme/widgets', title: 'x' }).expect(404);
      expect(github.requests).toHaveLength(0);
      const visible = await call(pinned, 'list_repositories').expect(200);
      expect(visible.body.result).toEqual([
        { full_name: 'acme/public-docs', default_branch: 'main', description: null },
      ]);
      await call(pinned, 'list_issues', { repo: 'acme/public-docs' }).expect(200);
      expect(github.requests[0].authorization).toBe(`token ${SERVER_TOKEN}`);
    });
  });

  describe('upstream failures', () => {
    it('5xx after the retry → 502 upstream_error with the upstream status', async () => {
      github.failNext({ status: 502, body: { message: 'Server Error' }, times: 2 });
      const res = await call(readWriteKey, 'list_pull_requests', { repo: 'acme/widgets' }).expect(502);
      expect(res.body.error).toMatchObject({
        code: 'upstream_error',
        details: { upstream: 'github', upstream_status: 502, repository: 'acme/widgets' },
      });
      expect(github.requests).toHaveLength(2);
      github.failNext({ status: 500, body: { message: 'Server Error' } });
      await call(readWriteKey, 'list_pull_requests', { repo: 'acme/widgets' }).expect(200); // one retry heals a blip
    });

    it('an upstream that echoes the Authorization header in its error body never leaks the token (tool call and registration)', async () => {
      for (const status of [401, 403, 422, 500]) {
        github.failNext({ status, echoAuthorization: true, times: status >= 500 ? 2 : 1 });
        const res = await call(readWriteKey, 'list_issues', { repo: 'acme/widgets' }).expect(502);
        expect(res.body.error).toMatchObject({
          code: 'upstream_error',
          details: { upstream: 'github', upstream_status: status, repository: 'acme/widgets' },
        });
        expect(JSON.stringify(res.body)).not.toContain(ACME_TOKEN);
        expect(JSON.stringify(res.body)).not.toMatch(/Bad credentials for/);
      }
      github.addRepo('acme', 'echo');
      github.grant('ghp_echo_secret_value', ['acme/echo']);
      github.failNext({ status: 401, echoAuthorization: true });
      const registration = await register({ owner: 'acme', name: 'echo', token: 'ghp_echo_secret_value' }, 400);
      expect(JSON.stringify(registration.body)).not.toContain('ghp_echo_secret_value');
    });

    it('primary rate limit → 429 rate_limited with Retry-After, and no more calls until the reset', async () => {
      github.addRepo('acme', 'busy');
      github.grant('ghp_busy', ['acme/busy']);
      await register({ owner: 'acme', name: 'busy', token: 'ghp_busy' });
      github.requests.length = 0;
      github.failNext(FakeGithubServer.primaryRateLimit(600));
      const limited = await call(readWriteKey, 'list_issues', { repo: 'acme/busy' }).expect(429);
      expect(limited.body.error.code).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(590);
      const again = await call(readWriteKey, 'list_commits', { repo: 'acme/busy' }).expect(429);
      expect(Number(again.headers['retry-after'])).toBeGreaterThan(590);
      expect(github.requests).toHaveLength(1);
      // Another token's quota is its own.
      await call(readWriteKey, 'list_issues', { repo: 'acme/widgets' }).expect(200);
    });
  });
});
