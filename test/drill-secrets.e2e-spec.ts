import { createHash, randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import { call, type RawRequest, type RawResponse } from './support/drill-helpers';
import { FakeGithubServer } from './support/fake-github-server';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * Secrets drill (OWASP API2 broken authentication / API3 excessive data exposure): after a run that
 * creates a user with a password, API keys, a project session token, a registered GitHub repository
 * with its token and an OAuth client (client secret, authorization code, access and refresh tokens,
 * rotated once), and then uses all of them (successes and failures), none of those plaintexts (nor the
 * METRICS_TOKEN) may appear in the debug logs, in any response body (except the one-time creation answers;
 * the Prometheus scrape of GET /metrics included), anywhere in
 * the database (every text/varchar/bytea/json/array column of every table, all schemas), or, with
 * TEST_REDIS_URL, anywhere in Redis (every key's name and value: rate limits, idempotency, BullMQ jobs).
 */
describe('secrets drill', () => {
  let t: TestApp;
  let github: FakeGithubServer;
  const logs: string[] = [];
  const originalWrite = process.stdout.write.bind(process.stdout);
  const bodies: { what: string; text: string }[] = [];
  const secrets: Record<string, string> = {};

  /** A call whose answer is scanned later (unless it is the one-time creation answer of a secret). */
  async function scanned(what: string, req: RawRequest, options: { creation?: boolean } = {}): Promise<RawResponse> {
    const res = await call(t.baseUrl, req);
    if (!options.creation)
      bodies.push({
        what: `${what} → ${res.status}`,
        text: res.text + JSON.stringify(Object.fromEntries(res.headers)),
      });
    return res;
  }

  beforeAll(async () => {
    process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
      logs.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      return (originalWrite as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
    github = await FakeGithubServer.start();
    secrets.metricsToken = `mt-${randomBytes(18).toString('hex')}`;
    t = await startTestApp({
      env: {
        LOG_LEVEL: 'debug',
        GITHUB_API_URL: github.baseUrl,
        GITHUB_TIMEOUT_MS: '2000',
        GITHUB_MAX_RETRIES: '0',
        METRICS_TOKEN: secrets.metricsToken,
      },
    });
  }, 120_000);

  afterAll(async () => {
    process.stdout.write = originalWrite;
    await t?.close();
    await github?.stop();
  });

  it('no plaintext password, API key, project token or GitHub token in logs, bodies or the database', async () => {
    const password = `Pw-${randomBytes(12).toString('hex')}`;
    secrets.password = password;
    const email = `secrets-${randomBytes(3).toString('hex')}@example.com`;
    const registered = await scanned('register', {
      method: 'POST',
      path: '/api/auth/register',
      body: { email, password, name: 'Secret Keeper' },
    });
    expect(registered.status).toBe(201);
    expect(registered.json.data.role).toBe('admin');
    await scanned('login wrong', {
      method: 'POST',
      path: '/api/auth/login',
      body: { email, password: `${password}x` },
    });
    await scanned('register dup', {
      method: 'POST',
      path: '/api/auth/register',
      body: { email, password, name: 'again' },
    });
    const login = await scanned('login', { method: 'POST', path: '/api/auth/login', body: { email, password } });
    expect(login.status).toBe(200);
    const jwt = login.json.data.accessToken as string;
    const b = (what: string, method: string, path: string, body?: unknown, creation = false) =>
      scanned(what, { method, path, token: jwt, body }, { creation });

    const project = (await b('project', 'POST', '/api/projects', { name: 'vault' })).json.data.id as string;

    // GitHub repository with its own token; the fake GitHub server only answers that token.
    const githubToken = `ghp_${randomBytes(18).toString('hex')}`;
    secrets.githubToken = githubToken;
    github.addRepo('vault', 'repo', { description: 'secret repo' });
    github.grant(githubToken, ['vault/repo'], { write: true });
    const repo = await b('register repo', 'POST', '/api/admin/github/repos', {
      owner: 'vault',
      name: 'repo',
      token: githubToken,
    });
    expect(repo.status).toBe(201);
    await b('register repo bad token', 'POST', '/api/admin/github/repos', {
      owner: 'vault',
      name: 'repo2',
      token: `${githubToken}zz`,
    });
    await b('list repos', 'GET', '/api/admin/github/repos');

    const keyRes = await b(
      'key',
      'POST',
      '/api/api-keys',
      {
        name: 'agent',
        scopes: ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'],
        expiresIn: '90d',
      },
      true,
    );
    expect(keyRes.status).toBe(201);
    const key = keyRes.json.data.key as string;
    secrets.apiKey = key;
    const key2Res = await b(
      'key2',
      'POST',
      '/api/api-keys',
      {
        name: 'spare',
        scopes: ['tasks:read'],
        expiresIn: 'never',
        projectIds: [project],
        tools: ['list_tasks', 'task_stats'],
        readOnly: true,
      },
      true,
    );
    const key2 = key2Res.json.data.key as string;
    secrets.apiKey2 = key2;
    const tokenRes = await b(
      'project token',
      'POST',
      `/api/projects/${project}/session-tokens`,
      { name: 'ci', role: 'editor' },
      true,
    );
    expect(tokenRes.status).toBe(201);
    const projectToken = tokenRes.json.data.token as string;
    secrets.projectToken = projectToken;

    // A roll's new key is a secret like any other: in its one answer only, never logged, listed or audited.
    const key2Id = key2Res.json.data.id as string;
    const rolled = await b('roll key2', 'POST', `/api/api-keys/${key2Id}/roll`, { overlap: '7d' }, true);
    expect(rolled.status).toBe(201);
    expect(rolled.headers.get('cache-control')).toBe('no-store');
    secrets.rolledApiKey = rolled.json.data.key as string;
    expect((await b('roll key2 again', 'POST', `/api/api-keys/${key2Id}/roll`, { overlap: '1h' })).status).toBe(409);
    await b('keys after roll', 'GET', '/api/api-keys');
    await b('rolled key view', 'GET', `/api/api-keys/${rolled.json.data.id as string}`);
    await b('audit after roll', 'GET', '/api/audit?action=api_key.roll');
    await b('policy', 'GET', '/api/admin/policy');
    await b('out of policy', 'GET', '/api/admin/api-keys/out-of-policy');
    expect(
      (
        await scanned('rolled key call', {
          method: 'POST',
          path: '/api/v1/public/mcp/call',
          token: secrets.rolledApiKey,
          body: { name: 'list_tasks', arguments: {} },
        })
      ).status,
    ).toBe(200);

    // Use everything, including failures that log.
    const tool = (
      what: string,
      token: string,
      name: string,
      args: Record<string, unknown>,
      headers?: Record<string, string>,
    ) =>
      scanned(what, {
        method: 'POST',
        path: '/api/v1/public/mcp/call',
        token,
        body: { name, arguments: args },
        headers,
      });
    expect(
      (
        await tool(
          'create_task',
          key,
          'create_task',
          { title: 'keep secrets', project_id: project },
          { 'Idempotency-Key': 'drill-1' },
        )
      ).status,
    ).toBe(200);
    await tool('create_document', key, 'create_document', {
      title: 'vault doc',
      content: 'nothing secret here',
      project_id: project,
    });
    await tool('list_tasks', key2, 'list_tasks', {});
    expect((await tool('list_issues', key, 'list_issues', { repo: 'vault/repo' })).status).toBe(200);
    expect((await tool('create_issue', key, 'create_issue', { repo: 'vault/repo', title: 'hello' })).status).toBe(200);
    github.failNext({ status: 500, body: { message: 'boom' } });
    await tool('list_commits upstream 500', key, 'list_commits', { repo: 'vault/repo' });
    // An upstream that echoes the Authorization header (the registered repository's token) in its error body.
    github.failNext({ status: 401, echoAuthorization: true });
    expect((await tool('list_issues upstream echo', key, 'list_issues', { repo: 'vault/repo' })).status).toBe(502);
    await tool('bad scope', key2, 'create_task', { title: 'x' });
    await scanned('tools', { method: 'GET', path: '/api/v1/public/mcp/tools', token: key });
    await scanned('mcp tools/list', {
      method: 'POST',
      path: '/api/v1/public/mcp',
      token: key,
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    await scanned('typo key', {
      method: 'POST',
      path: '/api/v1/public/mcp/call',
      token: `${key.slice(0, -1)}x`,
      body: { name: 'list_tasks' },
    });
    await scanned('key on Area B', { method: 'GET', path: '/api/auth/me', token: key });
    await scanned('jwt on Area A', { method: 'GET', path: '/api/v1/public/mcp/tools', token: jwt });
    await scanned('project token on own project', {
      method: 'GET',
      path: `/api/projects/${project}`,
      token: projectToken,
    });
    await scanned('project token docs', {
      method: 'GET',
      path: `/api/documents?projectId=${project}`,
      token: projectToken,
    });
    await scanned('project token on keys', { method: 'GET', path: '/api/api-keys', token: projectToken });
    await scanned('project token typo', { method: 'GET', path: `/api/projects/${project}`, token: `${projectToken}x` });
    await scanned('project token on Area A', { method: 'GET', path: '/api/v1/public/mcp/tools', token: projectToken });
    // Session tokens listed (no secret) and one revoked: it answers 401 from then on.
    const token2Res = await b(
      'project token 2',
      'POST',
      `/api/projects/${project}/session-tokens`,
      { name: 'leaked', role: 'viewer' },
      true,
    );
    secrets.projectToken2 = token2Res.json.data.token as string;
    await scanned('project token 2 used', {
      method: 'GET',
      path: `/api/projects/${project}`,
      token: secrets.projectToken2,
    });
    const listedTokens = await b('project tokens list', 'GET', `/api/projects/${project}/session-tokens`);
    expect(listedTokens.status).toBe(200);
    expect(listedTokens.json.data.items.map((item: { id: string }) => item.id).sort()).toEqual(
      [tokenRes.json.data.id, token2Res.json.data.id].sort(),
    );
    await scanned('project token lists tokens', {
      method: 'GET',
      path: `/api/projects/${project}/session-tokens`,
      token: projectToken,
    });
    expect(
      (await b('project token revoke', 'DELETE', `/api/projects/${project}/session-tokens/${token2Res.json.data.id}`))
        .status,
    ).toBe(200);
    expect(
      (
        await scanned('revoked project token', {
          method: 'GET',
          path: `/api/projects/${project}`,
          token: secrets.projectToken2,
        })
      ).status,
    ).toBe(401);
    await b('project tokens list after revoke', 'GET', `/api/projects/${project}/session-tokens`);
    await b('me', 'GET', '/api/auth/me');
    await b('keys', 'GET', '/api/api-keys');
    await b('key detail', 'GET', `/api/api-keys/${keyRes.json.data.id}`);
    await tool('read-only allowlisted', key2, 'list_tasks', {});
    await tool('outside the allowlist', key2, 'search_tasks', { query: 'x' });
    await tool('read-only write', key2, 'create_task', { title: 'no' });
    await b('revoke', 'DELETE', `/api/api-keys/${key2Res.json.data.id}`);
    await tool('revoked', key2, 'list_tasks', {});

    // OAuth: a confidential client, a code, tokens, a rotation, a reuse, a revocation.
    const form = (
      what: string,
      path: string,
      fields: Record<string, string>,
      headers: Record<string, string> = {},
      creation = false,
    ) =>
      scanned(
        what,
        {
          method: 'POST',
          path,
          rawBody: new URLSearchParams(fields).toString(),
          contentType: 'application/x-www-form-urlencoded',
          headers,
        },
        { creation },
      );
    const redirectUri = 'https://client.example.com/callback';
    const client = await scanned(
      'oauth register',
      { method: 'POST', path: '/oauth/register', body: { client_name: 'Drill', redirect_uris: [redirectUri] } },
      { creation: true },
    );
    expect(client.status).toBe(201);
    const clientId = client.json.client_id as string;
    secrets.oauthClientSecret = client.json.client_secret as string;
    const basic = {
      authorization: `Basic ${Buffer.from(`${clientId}:${secrets.oauthClientSecret}`).toString('base64')}`,
    };
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const authorize = {
      clientId,
      redirectUri,
      codeChallenge: challenge,
      codeChallengeMethod: 'S256',
      scope: 'tasks:read tasks:write',
      state: 'drill',
    };
    await scanned('oauth authorize page', {
      method: 'GET',
      path: `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256' })}`,
    });
    const consent = await b('oauth consent', 'POST', '/api/oauth/authorize', { ...authorize, approve: true }, true);
    expect(consent.status).toBe(200);
    secrets.oauthCode = new URL(consent.json.data.redirectTo as string).searchParams.get('code')!;
    await form(
      'oauth token wrong verifier',
      '/oauth/token',
      {
        grant_type: 'authorization_code',
        code: secrets.oauthCode,
        code_verifier: randomBytes(32).toString('base64url'),
        redirect_uri: redirectUri,
      },
      basic,
    );
    const consent2 = await b('oauth consent 2', 'POST', '/api/oauth/authorize', { ...authorize, approve: true }, true);
    secrets.oauthCode2 = new URL(consent2.json.data.redirectTo as string).searchParams.get('code')!;
    const tokens = await form(
      'oauth token',
      '/oauth/token',
      {
        grant_type: 'authorization_code',
        code: secrets.oauthCode2,
        code_verifier: verifier,
        redirect_uri: redirectUri,
      },
      basic,
      true,
    );
    expect(tokens.status).toBe(200);
    secrets.oauthAccessToken = tokens.json.access_token as string;
    secrets.oauthRefreshToken = tokens.json.refresh_token as string;
    await form('oauth token wrong secret', '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: secrets.oauthRefreshToken,
      client_id: clientId,
      client_secret: `${secrets.oauthClientSecret.slice(0, -1)}x`,
    });
    expect(
      (
        await tool('oauth create_task', secrets.oauthAccessToken, 'create_task', {
          title: 'via oauth',
          project_id: project,
        })
      ).status,
    ).toBe(200);
    await scanned('narrowed mcp tools/list', {
      method: 'POST',
      path: '/api/v1/public/mcp/x/tasks/readonly',
      token: key,
      headers: { accept: 'application/json, text/event-stream', 'x-mcp-toolsets': 'tasks,docs' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    await scanned('unknown toolset', {
      method: 'POST',
      path: '/api/v1/public/mcp/x/vault',
      token: key,
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    await scanned('oauth mcp tools/list', {
      method: 'POST',
      path: '/api/v1/public/mcp',
      token: secrets.oauthAccessToken,
      headers: { accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    await scanned('oauth token on Area B', { method: 'GET', path: '/api/auth/me', token: secrets.oauthAccessToken });
    await scanned('oauth refresh on Area A', {
      method: 'GET',
      path: '/api/v1/public/mcp/tools',
      token: secrets.oauthRefreshToken,
    });
    await scanned('oauth typo token', {
      method: 'GET',
      path: '/api/v1/public/mcp/tools',
      token: `${secrets.oauthAccessToken.slice(0, -1)}x`,
    });
    const rotated = await form(
      'oauth refresh',
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: secrets.oauthRefreshToken },
      basic,
      true,
    );
    expect(rotated.status).toBe(200);
    secrets.oauthAccessToken2 = rotated.json.access_token as string;
    secrets.oauthRefreshToken2 = rotated.json.refresh_token as string;
    await tool('oauth rotated', secrets.oauthAccessToken2, 'list_tasks', {});
    await form(
      'oauth refresh reuse',
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: secrets.oauthRefreshToken },
      basic,
    );
    await tool('oauth after reuse', secrets.oauthAccessToken2, 'list_tasks', {});
    await form('oauth revoke', '/oauth/revoke', { token: secrets.oauthRefreshToken2 }, basic);
    await b('oauth grants', 'GET', '/api/oauth/grants');
    await b('project', 'GET', `/api/projects/${project}`);
    await b('openapi', 'GET', '/api/docs/openapi.json');
    await scanned('health', { method: 'GET', path: '/api/health' });

    // Wait for background work (indexing, usage flush) to write what it writes.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // The audit log, as its owner and an admin's SIEM export read it (both scanned below, as is the audit_log table).
    await b('own audit', 'GET', '/api/audit?limit=200');
    const exported = await b('audit export', 'GET', '/api/admin/audit/export');
    expect(exported.status).toBe(200);
    const actions = new Set(
      exported.text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).action as string),
    );
    for (const action of [
      'auth.login_failed',
      'github_repo.register',
      'project.create',
      'project.token.create',
      'project.token.revoke',
      'api_key.create',
      'oauth.grant',
      'tool.call',
    ])
      expect([action, actions.has(action)]).toEqual([action, true]);
    // The Prometheus scrape after all of that (its labels saw every route, tool and failure above), and refused scrapes.
    await scanned('metrics wrong token', { method: 'GET', path: '/metrics', token: `${secrets.metricsToken}x` });
    await scanned('metrics no token', { method: 'GET', path: '/metrics' });
    const metrics = await scanned('metrics', { method: 'GET', path: '/metrics', token: secrets.metricsToken });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('atrium_tool_calls_total{tool="create_task",status="ok",door="json"}');

    // ---- scan ----------------------------------------------------------------------------------
    // Each secret, and its tail beyond any displayed prefix (a truncated copy is still a leak).
    const needles: [string, string][] = [];
    for (const [name, value] of Object.entries(secrets)) {
      needles.push([name, value]);
      needles.push([`${name} (tail)`, value.slice(-20)]);
    }
    const findings: string[] = [];
    const scan = (where: string, text: string) => {
      for (const [name, needle] of needles)
        if (text.includes(needle))
          findings.push(
            `${name} in ${where}: …${text.slice(Math.max(0, text.indexOf(needle) - 80), text.indexOf(needle) + 40)}…`,
          );
    };
    const logText = logs.join('');
    expect(logText).toContain('"level":"debug"'); // the capture really saw debug logs
    scan('logs', logText);
    for (const body of bodies) scan(`response ${body.what}`, body.text);

    const db = new Client({ connectionString: t.database.url });
    await db.connect();
    let columnsScanned = 0;
    let cellsScanned = 0;
    try {
      const columns: { table_schema: string; table_name: string; column_name: string; data_type: string }[] = (
        await db.query(
          `SELECT c.table_schema, c.table_name, c.column_name, c.data_type
           FROM information_schema.columns c
           JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name AND tb.table_type = 'BASE TABLE'
           WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema')
             AND c.data_type IN ('text', 'character varying', 'character', 'bytea', 'json', 'jsonb', 'ARRAY', 'USER-DEFINED')`,
        )
      ).rows;
      for (const column of columns) {
        const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
        const expr = column.data_type === 'bytea' ? ident(column.column_name) : `${ident(column.column_name)}::text`;
        const rows = (
          await db.query(
            `SELECT ${expr} AS v FROM ${ident(column.table_schema)}.${ident(column.table_name)} WHERE ${ident(column.column_name)} IS NOT NULL`,
          )
        ).rows;
        columnsScanned += 1;
        for (const row of rows) {
          cellsScanned += 1;
          const value = Buffer.isBuffer(row.v) ? row.v.toString('latin1') : String(row.v);
          scan(`db ${column.table_schema}.${column.table_name}.${column.column_name}`, value);
        }
      }
    } finally {
      await db.end();
    }
    // Redis: every key of the server (this app's prefix and any other), its name and its value by type.
    let redisKeysScanned: number | 'not configured' = 'not configured';
    if (process.env.TEST_REDIS_URL) {
      const redis = new Redis(process.env.TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await redis.connect();
      let scannedKeys = 0;
      let ownKeys = 0;
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'COUNT', 500);
          cursor = next;
          for (const key of keys) {
            scannedKeys += 1;
            if (key.startsWith(t.config.redis.prefix)) ownKeys += 1;
            const type = await redis.type(key);
            const parts: string[] = [key];
            if (type === 'string') parts.push(((await redis.getBuffer(key)) ?? Buffer.alloc(0)).toString('latin1'));
            else if (type === 'hash') parts.push(...Object.entries(await redis.hgetall(key)).flat());
            else if (type === 'list') parts.push(...(await redis.lrange(key, 0, -1)));
            else if (type === 'set') parts.push(...(await redis.smembers(key)));
            else if (type === 'zset') parts.push(...(await redis.zrange(key, 0, -1)));
            else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
            scan(`redis ${type} ${key}`, parts.join('\n'));
          }
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
      // The scan really saw this app's keys (rate-limit windows, queues), not an empty or other server.
      expect(ownKeys).toBeGreaterThan(0);
      redisKeysScanned = scannedKeys;
    }
    // eslint-disable-next-line no-console
    console.log(
      `drill-secrets: secrets=${Object.keys(secrets).length}, log bytes=${logText.length}, bodies=${bodies.length}, ` +
        `db columns=${columnsScanned}, db cells=${cellsScanned}, redis keys=${redisKeysScanned}, secrets found=${findings.length}`,
    );
    expect(findings).toEqual([]);
    expect(columnsScanned).toBeGreaterThan(10);
  }, 120_000);
});
