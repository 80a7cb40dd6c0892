import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { randomUUID } from 'node:crypto';
import { get as httpGet } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Client as PgClient } from 'pg';
import { bearer, callTool, makeApiKey, makeUser, toolResult, type TestUser } from './support/factories.js';
import { FakeGithubServer } from './support/fake-github-server.js';
import { oauthTokens } from './support/oauth-helpers.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { pollUntil } from './support/wait.js';

/** See api-keys.e2e-spec.ts: one pooled connection keeps the embedded engine correct under concurrency. */
const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';

/** The v1 client always asks for its latest revision: this makes its initialize ask for an older one. */
function pinInitialize(init: RequestInit | undefined, revision: string): RequestInit | undefined {
  if (typeof init?.body !== 'string' || !init.body.includes('"initialize"')) return init;
  const message = JSON.parse(init.body) as { method?: string; params?: { protocolVersion?: string } };
  if (message.method !== 'initialize' || !message.params) return init;
  message.params.protocolVersion = revision;
  return { ...init, body: JSON.stringify(message) };
}

/** The audit log (API.md "Audit log (revision 2)"): who did what, append-only, per user and for admins. */
describe('audit log', () => {
  let app: TestApp;
  let github: FakeGithubServer;
  let admin: TestUser;
  let alice: TestUser;
  let bob: TestUser;
  let sql: PgClient;
  const closers: { close(): Promise<void> }[] = [];

  /** Every entry of one user, oldest first, through GET /api/audit (all pages). */
  async function ownEntries(user: TestUser, query: Record<string, string> = {}): Promise<any[]> {
    const entries: any[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: any } = await app.http
        .get('/api/audit')
        .query({ ...query, limit: '200', ...(cursor ? { cursor } : {}) })
        .set(bearer(user.token))
        .expect(200);
      entries.push(...res.body.data.items);
      cursor = res.body.data.nextCursor;
    } while (cursor);
    return entries.reverse();
  }

  async function adminEntries(query: Record<string, string>): Promise<any[]> {
    const res = await app.http
      .get('/api/admin/audit')
      .query({ limit: '200', ...query })
      .set(bearer(admin.token))
      .expect(200);
    return res.body.data.items.reverse();
  }

  beforeAll(async () => {
    github = await FakeGithubServer.start();
    github.addRepo('acme', 'widgets');
    github.grant('ghp_server_token_for_audit', 'all');
    app = await startTestApp({
      env: {
        ...EMBEDDED_SAFE_ENV,
        GITHUB_API_URL: github.baseUrl,
        GITHUB_TOKEN: 'ghp_server_token_for_audit',
        GITHUB_MAX_RETRIES: '0',
      },
    });
    admin = await makeUser(app);
    expect(admin.role).toBe('admin');
    alice = await makeUser(app);
    bob = await makeUser(app);
    sql = new PgClient({ connectionString: app.database.url });
    await sql.connect();
  }, 180_000);

  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close().catch(() => undefined)));
    await sql?.end();
    await app?.close();
    await github?.stop();
  });

  it('records each Area B change once, as the credential that made it (user token, project token)', async () => {
    const key = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    await app.http.delete(`/api/api-keys/${key.id}`).set(bearer(alice.token)).expect(200);
    const project = (
      await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Audited' }).expect(201)
    ).body.data;
    await app.http
      .patch(`/api/projects/${project.id}`)
      .set(bearer(alice.token))
      .send({ description: 'changed' })
      .expect(200);
    await app.http
      .post(`/api/projects/${project.id}/members`)
      .set(bearer(alice.token))
      .send({ userId: bob.id, role: 'viewer' })
      .expect(201);
    const minted = (
      await app.http
        .post(`/api/projects/${project.id}/session-tokens`)
        .set(bearer(alice.token))
        .send({ name: 'ci', role: 'editor', expiresInMinutes: 60 })
        .expect(201)
    ).body.data;
    const uploaded = await app.http
      .post('/api/documents/upload')
      .set(bearer(minted.token))
      .field('projectId', project.id)
      .attach('file', Buffer.from('# Notes\nsecret-free text'), 'notes.md')
      .expect(201);
    await app.http.delete(`/api/documents/${uploaded.body.data.id}`).set(bearer(alice.token)).expect(200);
    // A refused change leaves no entry: bob is a viewer.
    await app.http
      .patch(`/api/projects/${project.id}`)
      .set(bearer(bob.token))
      .send({ description: 'nope' })
      .expect(403);

    const entries = await ownEntries(alice);
    const userToken = { userId: alice.id, via: 'user_token', credentialId: null };
    expect(entries.map((e) => [e.action, e.target, e.actor, e.outcome])).toEqual([
      ['api_key.create', { type: 'api_key', id: key.id }, userToken, { status: 'ok' }],
      ['api_key.revoke', { type: 'api_key', id: key.id }, userToken, { status: 'ok' }],
      ['project.create', { type: 'project', id: project.id }, userToken, { status: 'ok' }],
      ['project.update', { type: 'project', id: project.id }, userToken, { status: 'ok' }],
      ['project.member.set', { type: 'project', id: project.id }, userToken, { status: 'ok' }],
      ['project.token.create', { type: 'project', id: project.id }, userToken, { status: 'ok' }],
      [
        'document.upload',
        { type: 'document', id: uploaded.body.data.id },
        { userId: alice.id, via: 'project_token', credentialId: minted.id },
        { status: 'ok' },
      ],
      ['document.delete', { type: 'document', id: uploaded.body.data.id }, userToken, { status: 'ok' }],
    ]);
    expect(entries[4].details).toEqual({ userId: bob.id, role: 'viewer' });
    expect(JSON.stringify(entries)).not.toContain(minted.token);
    // Ids sort by time (UUIDv7), newest first in the list.
    expect(entries.map((e) => e.id)).toEqual([...entries.map((e) => e.id)].sort());
    expect(await ownEntries(bob)).toEqual([]);
  });

  it('records every tool call on the JSON door, writes with their change, failures with their error, bodies left out', async () => {
    const key = await makeApiKey(app, alice, { scopes: ['tasks:read', 'tasks:write', 'docs:read', 'docs:write'] });
    const task = await toolResult(app, key.key, 'create_task', { title: 'audited task', description: 'private words' });
    await toolResult(app, key.key, 'list_tasks', { limit: 5 });
    const missing = randomUUID();
    expect((await callTool(app, key.key, 'get_task', { task_id: missing })).status).toBe(404);
    const doc = await toolResult(app, key.key, 'create_document', {
      title: 'Body left out',
      content: 'BODY-TEXT-NEVER-AUDITED',
    });
    expect((await callTool(app, key.key, 'create_task', { title: 42, description: 'refused words' })).status).toBe(400);
    const once = await callTool(
      app,
      key.key,
      'create_task',
      { title: 'once' },
      { 'Idempotency-Key': 'audit-replay-1' },
    );
    const again = await callTool(
      app,
      key.key,
      'create_task',
      { title: 'once' },
      { 'Idempotency-Key': 'audit-replay-1' },
    );
    expect([once.status, again.status, again.headers['idempotent-replayed']]).toEqual([200, 200, 'true']);
    // Refused by the JSON door's scope guard, before any tool runs: still calls, with their error.
    expect((await callTool(app, key.key, 'list_repositories', {})).status).toBe(403);
    expect((await callTool(app, key.key, 'no_such_tool', {})).status).toBe(404);

    const calls = (await ownEntries(alice, { action: 'tool.call' })).filter((e) => e.actor.credentialId === key.id);
    const viaKey = { userId: alice.id, via: 'api_key', credentialId: key.id };
    expect(calls.map((e) => [e.details.tool, e.target, e.actor, e.outcome])).toEqual([
      ['create_task', { type: 'task', id: task.id }, viaKey, { status: 'ok' }],
      ['list_tasks', null, viaKey, { status: 'ok' }],
      ['get_task', null, viaKey, { status: 'error', code: 'not_found' }],
      ['create_document', { type: 'document', id: doc.id }, viaKey, { status: 'ok' }],
      ['create_task', null, viaKey, { status: 'error', code: 'invalid_argument' }],
      ['create_task', { type: 'task', id: once.body.result.id }, viaKey, { status: 'ok' }],
      ['create_task', null, viaKey, { status: 'ok' }],
      ['list_repositories', null, viaKey, { status: 'error', code: 'insufficient_scope' }],
      ['no_such_tool', null, viaKey, { status: 'error', code: 'unknown_tool' }],
    ]);
    // A refused call keeps the tool name only; a replay says it is one (nothing ran again).
    expect(calls[4].details).toEqual({ tool: 'create_task' });
    expect(calls[6].details).toEqual({
      tool: 'create_task',
      arguments: expect.objectContaining({ title: 'once' }),
      replayed: true,
    });
    expect(calls[0].details.arguments).toMatchObject({ title: 'audited task', description: '[omitted]' });
    expect(calls[2].details.arguments).toEqual({ task_id: missing });
    expect(calls[3].details.arguments).toMatchObject({ title: 'Body left out', content: '[omitted]' });
    expect(JSON.stringify(calls)).not.toContain('BODY-TEXT-NEVER-AUDITED');
    expect(JSON.stringify(calls)).not.toContain('private words');
    expect(JSON.stringify(calls)).not.toContain('refused words');
  });

  it('keeps the arguments of calls written behind in a batch exactly as sent (quotes, backslashes, braces, commas, non-ASCII)', async () => {
    const key = await makeApiKey(app, alice, { scopes: ['docs:read'] });
    const queries = ['he said "stop" \\ then {a,b}', 'ünïcödé 🙂, NULL', '{"not":"json"}'];
    for (const query of queries)
      expect((await callTool(app, key.key, 'search_documents', { query, limit: 1 })).status).toBe(200);
    const calls = (await ownEntries(alice, { action: 'tool.call' })).filter((e) => e.actor.credentialId === key.id);
    expect(calls.map((e) => e.details.arguments?.query).sort()).toEqual([...queries].sort());
  });

  it('names the MCP client (clientInfo name and version) of every audited MCP call, on every revision, in the audit log and the usage view', async () => {
    const key = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    const modern = new ModernClient(
      { name: 'audit-e2e-client', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    closers.push(modern);
    await modern.connect(
      new ModernTransport(new URL(`${app.baseUrl}${MCP_PATH}`), { requestInit: { headers: bearer(key.key) } }),
    );
    await modern.callTool({ name: 'list_tasks', arguments: { limit: 1 } });
    // The 2025 revisions name the client only in initialize: the session it opens names it on every later call,
    // also for clients that declare no elicitation (most of them).
    const legacyRevisions = ['2025-03-26', '2025-06-18', '2025-11-25'];
    for (const revision of legacyRevisions) {
      const legacy = new LegacyClient({ name: `legacy-${revision}`, version: '1.2.3' });
      closers.push(legacy);
      const transport = new LegacyTransport(new URL(`${app.baseUrl}${MCP_PATH}`), {
        requestInit: { headers: bearer(key.key) },
        fetch: (url, init) => fetch(url, revision === '2025-11-25' ? init : pinInitialize(init, revision)),
      });
      await legacy.connect(transport);
      expect(transport.sessionId).toMatch(/^l1\./);
      await legacy.callTool({ name: 'list_tasks', arguments: { limit: 1 } });
    }
    const calls = (await ownEntries(alice, { action: 'tool.call' })).filter((e) => e.actor.credentialId === key.id);
    const actor = (clientName: string, clientVersion: string) => ({
      userId: alice.id,
      via: 'api_key',
      credentialId: key.id,
      clientName,
      clientVersion,
    });
    expect(calls.map((e) => [e.details.tool, e.actor])).toEqual([
      ['list_tasks', actor('audit-e2e-client', '2.0.0')],
      ...legacyRevisions.map((revision) => ['list_tasks', actor(`legacy-${revision}`, '1.2.3')]),
    ]);
    const usage = (await app.http.get(`/api/api-keys/${key.id}`).set(bearer(alice.token)).expect(200)).body.data
      .recentUsage as { tool: string; clientName: string | null; clientVersion: string | null }[];
    const named = usage.filter((u) => u.tool === 'list_tasks').map((u) => `${u.clientName}@${u.clientVersion}`);
    expect(named.sort()).toEqual(['audit-e2e-client@2.0.0', ...legacyRevisions.map((r) => `legacy-${r}@1.2.3`)].sort());
  });

  it('a label session is bound to its credential: forged, altered or foreign ones are 404, DELETE is 405', async () => {
    const key = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    // Another credential of the same user: a label is bound to its credential, not only to its owner.
    const other = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
    const initialize = {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'labelled', version: '9' } },
    };
    const opened = await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', 'application/json, text/event-stream')
      .send(initialize)
      .expect(200);
    const label = opened.headers['mcp-session-id'] as string;
    expect(label).toMatch(/^l1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    const list = (credential: string, session: string) =>
      app.http
        .post(MCP_PATH)
        .set(bearer(credential))
        .set('Accept', 'application/json, text/event-stream')
        .set('MCP-Protocol-Version', '2025-11-25')
        .set('Mcp-Session-Id', session)
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect((await list(key.key, label)).status).toBe(200);
    const [, payload, mac] = label.split('.');
    const renamed = Buffer.from(JSON.stringify(['2025-11-25', 'someone-else', '9'])).toString('base64url');
    for (const forged of [
      `l1.${renamed}.${mac}`,
      `l1.${payload}.${'A'.repeat(22)}`,
      `${label}x`,
      'l1..',
      `l1.${payload}`,
    ]) {
      expect((await list(key.key, forged)).status).toBe(404);
    }
    expect((await list(other.key, label)).status).toBe(404);
    const del = await app.http.delete(MCP_PATH).set(bearer(key.key)).set('Mcp-Session-Id', label);
    expect(del.status).toBe(405);
    expect(del.headers.allow).toBe('POST');
    expect((await app.http.delete(MCP_PATH).set(bearer(other.key)).set('Mcp-Session-Id', label)).status).toBe(404);
  });

  it('records an OAuth grant, its tool calls with the OAuth client name, and its revocation', async () => {
    const tokens = await oauthTokens(app, bob, ['tasks:read']);
    await toolResult(app, tokens.access_token, 'list_tasks', {});
    const grants = (await app.http.get('/api/oauth/grants').set(bearer(bob.token)).expect(200)).body.data.items;
    expect(grants).toHaveLength(1);
    await app.http.delete(`/api/oauth/grants/${grants[0].id}`).set(bearer(bob.token)).expect(200);

    const entries = await ownEntries(bob);
    const viaGrant = { userId: bob.id, via: 'oauth', credentialId: grants[0].id, clientName: 'Test client' };
    expect(entries.map((e) => [e.action, e.actor, e.target])).toEqual([
      ['oauth.grant', viaGrant, { type: 'oauth_grant', id: grants[0].id }],
      ['tool.call', viaGrant, null],
      [
        'oauth.revoke',
        { userId: bob.id, via: 'user_token', credentialId: null },
        { type: 'oauth_grant', id: grants[0].id },
      ],
    ]);
    expect(JSON.stringify(entries)).not.toContain(tokens.access_token);
    expect(JSON.stringify(entries)).not.toContain(tokens.refresh_token);

    // The client ends a second grant itself (RFC 7009, its refresh token): on the log as the client did it, once.
    const second = await oauthTokens(app, bob, ['tasks:read']);
    await app.http
      .post('/oauth/revoke')
      .type('form')
      .send({ token: second.access_token, client_id: second.clientId })
      .expect(200);
    await app.http
      .post('/oauth/revoke')
      .type('form')
      .send({ token: second.refresh_token, client_id: second.clientId })
      .expect(200);
    const revokes = (await ownEntries(bob, { action: 'oauth.revoke' })).filter((e) => e.target.id !== grants[0].id);
    expect(revokes.map((e) => [e.actor, e.details])).toEqual([
      [{ userId: bob.id, via: 'oauth', credentialId: expect.any(String), clientName: 'Test client' }, { by: 'client' }],
    ]);
    expect(revokes[0].target).toEqual({ type: 'oauth_grant', id: revokes[0].actor.credentialId });
    expect(JSON.stringify(revokes)).not.toContain(second.refresh_token);
  });

  it('records agent-run tool calls with the run id', async () => {
    const project = (
      await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'Agent audit' }).expect(201)
    ).body.data;
    const started = await app.http
      .post('/api/agent/execute')
      .set(bearer(alice.token))
      .send({ projectId: project.id, input: 'What do we know?' })
      .expect(202);
    const runId = started.body.data.jobId as string;
    await pollUntil(
      'the run finished',
      async () => (await app.http.get(`/api/agent/status/${runId}`).set(bearer(alice.token)).expect(200)).body.data,
      (run: any) => ['succeeded', 'failed', 'cancelled'].includes(run.status),
      { timeoutMs: 30_000 },
    );
    const calls = (await ownEntries(alice, { action: 'tool.call' })).filter((e) => e.actor.via === 'agent_run');
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls)
      expect(call.actor).toEqual({ userId: alice.id, via: 'agent_run', credentialId: null, runId });
    expect(calls.map((c) => c.details.tool)).toContain('search_documents');
  });

  it('records admin GitHub registrations and failed logins', async () => {
    const registered = await app.http
      .post('/api/admin/github/repos')
      .set(bearer(admin.token))
      .send({ owner: 'acme', name: 'widgets' })
      .expect(201);
    await app.http.delete(`/api/admin/github/repos/${registered.body.data.id}`).set(bearer(admin.token)).expect(200);
    await app.http.post('/api/auth/login').send({ email: alice.email, password: 'not-her-password-123' }).expect(401);

    const adminOwn = await ownEntries(admin);
    expect(adminOwn.map((e) => [e.action, e.target, e.details])).toEqual([
      [
        'github_repo.register',
        { type: 'github_repo', id: registered.body.data.id },
        { fullName: 'acme/widgets', tokenSource: 'server' },
      ],
      ['github_repo.delete', { type: 'github_repo', id: registered.body.data.id }, {}],
    ]);
    const failed = await ownEntries(alice, { action: 'auth.login_failed' });
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      actor: { userId: alice.id, via: 'user_token', credentialId: null },
      outcome: { status: 'error', code: 'auth_invalid' },
      details: { email: alice.email },
    });
    expect(JSON.stringify(failed)).not.toContain('not-her-password-123');
  });

  it('admin routes: everyone, by user and credential; members get 403; hostile filters are 400', async () => {
    await app.http.get('/api/admin/audit').set(bearer(alice.token)).expect(403);
    await app.http.get('/api/admin/audit/export').set(bearer(alice.token)).expect(403);
    await app.http.get('/api/audit').expect(401);

    const everyone = (
      await app.http.get('/api/admin/audit').query({ limit: '200' }).set(bearer(admin.token)).expect(200)
    ).body.data.items;
    expect(new Set(everyone.map((e: any) => e.actor.userId))).toEqual(new Set([admin.id, alice.id, bob.id]));
    const bobs = await adminEntries({ userId: bob.id });
    expect(bobs.length).toBeGreaterThan(0);
    expect(bobs.every((e) => e.actor.userId === bob.id)).toBe(true);
    const grantId = bobs[0].actor.credentialId;
    expect((await adminEntries({ credentialId: grantId })).map((e) => e.action)).toEqual(['oauth.grant', 'tool.call']);
    const future = await adminEntries({ from: new Date(Date.now() + 60_000).toISOString() });
    expect(future).toEqual([]);

    // A user's filters never widen past their own entries.
    const sneaky = await app.http.get('/api/audit').query({ userId: bob.id }).set(bearer(alice.token));
    expect(sneaky.status).toBe(400);

    for (const query of [
      { cursor: 'not-a-cursor' },
      { cursor: Buffer.from(JSON.stringify({ createdAt: 'x', id: "1' OR 1=1" })).toString('base64url') },
      { from: '2026-13-45T00:00:00Z' },
      { to: 'yesterday' },
      { from: '0000-01-01T00:00:00Z' },
      { limit: '0' },
      { limit: '100000' },
      { action: 'tool.call;DROP TABLE audit_log' },
      { userId: 'not-a-uuid' },
      { credentialId: "'; --" },
    ]) {
      const res = await app.http.get('/api/admin/audit').query(query).set(bearer(admin.token));
      expect([res.status, res.body.error?.code, query]).toEqual([400, 'VALIDATION_FAILED', query]);
    }
  });

  it('exports 100k entries as NDJSON, streamed with flat memory', async () => {
    const total = app.database.kind === 'postgres' ? 100_000 : 20_000;
    // UUIDv7 ids built in SQL from each entry's time: 48 bits of ms, version 7, variant 8, random rest.
    await sql.query(
      `INSERT INTO audit_log (id, created_at, action, user_id, via, credential_id, target_type, target_id, outcome_status, details)
       SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
              t, 'tool.call', $1, 'api_key', $2, 'task', gen_random_uuid()::text, 'ok',
              jsonb_build_object('tool', 'list_tasks', 'arguments', jsonb_build_object('limit', i % 50, 'status', 'todo'))
       FROM generate_series(1, $3::int) i, LATERAL (SELECT now() - interval '2 hours' - i * interval '1 ms' AS t, md5(i::text) AS h) x`,
      [bob.id, randomUUID(), total],
    );
    const enableGc = () => {
      setFlagsFromString('--expose-gc');
      return runInNewContext('gc') as () => void;
    };
    const gc = enableGc();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    let peak = 0;
    const { lines, contentType, first, last } = await new Promise<{
      lines: number;
      contentType: string;
      first: any;
      last: any;
    }>((resolve, reject) => {
      const url = new URL(`${app.baseUrl}/api/admin/audit/export?userId=${bob.id}&action=tool.call`);
      httpGet(url, { headers: bearer(admin.token) }, (res) => {
        let count = 0;
        let rest = '';
        let firstEntry: any;
        let lastLine = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const parts = (rest + chunk).split('\n');
          rest = parts.pop()!;
          for (const line of parts) {
            if (count === 0) firstEntry = JSON.parse(line);
            lastLine = line;
            count += 1;
            if (count % 10_000 === 0) {
              gc();
              peak = Math.max(peak, process.memoryUsage().heapUsed - heapBefore);
              // A slow reader: the server must wait (backpressure), not buffer the rest.
              res.pause();
              setTimeout(() => res.resume(), 20);
            }
          }
        });
        res.on('end', () =>
          resolve({
            lines: count,
            contentType: String(res.headers['content-type']),
            first: firstEntry,
            last: JSON.parse(lastLine),
          }),
        );
        res.on('error', reject);
      }).on('error', reject);
    });
    expect(contentType).toMatch(/^application\/x-ndjson/);
    expect(lines).toBeGreaterThanOrEqual(total);
    expect(first.actor.userId).toBe(bob.id);
    expect(new Date(first.at).getTime()).toBeGreaterThan(new Date(last.at).getTime()); // newest first
    // The whole export as parsed objects would take well over 100 MB of heap; one keyset page is a few MB.
    // eslint-disable-next-line no-console
    console.log(`audit export: ${lines} lines, peak heap growth ${(peak / 1024 / 1024).toFixed(1)} MB`);
    expect(peak).toBeLessThan(40 * 1024 * 1024);
  }, 120_000);

  it('an export whose client goes away stops', async () => {
    const aborted = await new Promise<number>((resolve, reject) => {
      const req = httpGet(new URL(`${app.baseUrl}/api/admin/audit/export`), { headers: bearer(admin.token) }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > 10_000) {
            req.destroy();
            resolve(bytes);
          }
        });
      });
      req.on('error', (error) => (error.message.includes('socket hang up') ? undefined : reject(error)));
    });
    expect(aborted).toBeGreaterThan(10_000);
    // The server is fine and answers the next request at once.
    await app.http.get('/api/audit').query({ limit: '1' }).set(bearer(admin.token)).expect(200);
  });
});
