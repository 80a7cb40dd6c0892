import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as PgClient } from 'pg';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import { freePort } from './support/oauth-helpers.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const run = promisify(execFile);
const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';
const ACCEPT = 'application/json, text/event-stream';
const CONFORMANCE_DIR = join(__dirname, '..', 'node_modules', '@modelcontextprotocol', 'conformance');

/**
 * Every MCP revision Atrium speaks on the one registry: 2025-03-26, 2025-06-18, 2025-11-25 (v1 SDK,
 * initialize handshake) and 2026-07-28 (v2 SDK, server/discover, per-request _meta), plus the
 * same-origin rule and the official conformance suite's server scenarios.
 */
describe('MCP protocol revisions on /api/v1/public/mcp', () => {
  let app: TestApp;
  let alice: TestUser;
  let key: { id: string; key: string };
  let publicUrl: string;
  let proxy: Server;
  const clients: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    // The app is reached through a front door (this proxy) that adds the key, as the conformance suite
    // cannot send one; PUBLIC_URL is that front door, so its origin is the server's own origin.
    const proxyPort = await freePort();
    publicUrl = `http://localhost:${proxyPort}`;
    app = await startTestApp({ env: { ...EMBEDDED_SAFE_ENV, PUBLIC_URL: publicUrl } });
    alice = await makeUser(app);
    key = await makeApiKey(app, alice, { scopes: ['tasks:read', 'tasks:write'] });
    const target = new URL(app.baseUrl);
    proxy = createServer((req, res) => {
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, authorization: `Bearer ${key.key}` },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
    await app?.close();
  });

  const legacyToolNames = async (): Promise<string[]> => {
    const client = new Client({ name: 'legacy', version: '1.0.0' });
    clients.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.baseUrl}${MCP_PATH}`), {
        requestInit: { headers: bearer(key.key) },
      }),
    );
    return (await client.listTools()).tools.map((t) => t.name);
  };

  const modernClient = async (mode: 'auto' | { pin: string }): Promise<ModernClient> => {
    const client = new ModernClient({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode } });
    clients.push(client);
    await client.connect(
      new ModernTransport(new URL(`${app.baseUrl}${MCP_PATH}`), { requestInit: { headers: bearer(key.key) } }),
    );
    return client;
  };

  it('the v2 SDK client pinned to 2026-07-28 discovers, lists the same tools in the same order, and calls one', async () => {
    const client = await modernClient({ pin: '2026-07-28' });
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect(client.getServerVersion()).toMatchObject({ name: 'atrium' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(await legacyToolNames());
    expect(tools.find((t) => t.name === 'create_task')).toMatchObject({
      annotations: { readOnlyHint: false },
      inputSchema: { type: 'object' },
    });
    const created = await client.callTool({
      name: 'create_task',
      arguments: { title: 'from 2026-07-28', priority: 'low' },
    });
    expect(created.isError).toBeFalsy();
    expect(created.structuredContent).toMatchObject({ title: 'from 2026-07-28', creator_id: alice.id });
    const failed = await client.callTool({
      name: 'get_task',
      arguments: { task_id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(failed.isError).toBe(true);
    expect(failed.structuredContent).toMatchObject({ error: { code: 'not_found' } });
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no_such_tool/);
  });

  it('the v2 SDK client in auto mode settles on 2026-07-28 too', async () => {
    const client = await modernClient('auto');
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect((await client.listTools()).tools.length).toBe(7);
  });

  it('2026-07-28 requests count in the usage log and call count like any other', async () => {
    const client = await modernClient({ pin: '2026-07-28' });
    await client.callTool({ name: 'list_tasks', arguments: {} });
    const db = new PgClient({ connectionString: app.database.url });
    await db.connect();
    try {
      // The usage log is written behind (200 ms); poll for the row rather than sleep.
      let rows: { tool: string; status: number }[] = [];
      for (let i = 0; i < 50 && !rows.some((r) => r.tool === 'list_tasks'); i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        rows = (await db.query(`SELECT tool, status FROM api_key_usage WHERE api_key_id = $1`, [key.id])).rows;
      }
      expect(rows).toEqual(
        expect.arrayContaining([
          { tool: 'list_tasks', status: 200 },
          { tool: 'server/discover', status: 200 },
        ]),
      );
    } finally {
      await db.end();
    }
  });

  it.each(['2025-03-26', '2025-06-18', '2025-11-25'])('initialize with %s answers that revision', async (version) => {
    const res = await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } },
      })
      .expect(200);
    expect(res.body.result.protocolVersion).toBe(version);
  });

  it('a 2026-07-28 request without a key is 401 with the resource metadata challenge', async () => {
    const res = await app.http
      .post(MCP_PATH)
      .set('Accept', ACCEPT)
      .set('MCP-Protocol-Version', '2026-07-28')
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
      })
      .expect(401);
    expect(res.headers['www-authenticate']).toBe(
      `Bearer resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/api/v1/public/mcp"`,
    );
  });

  it("a browser on the server's own origin (PUBLIC_URL's) may use the endpoint; other origins are refused", async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'ping' };
    await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .set('Origin', publicUrl)
      .send(body)
      .expect(200);
    await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .set('Origin', 'http://evil.example.com')
      .send(body)
      .expect(403);
    await app.http
      .post(MCP_PATH)
      .set(bearer(key.key))
      .set('Accept', ACCEPT)
      .set('Origin', app.baseUrl)
      .send(body)
      .expect(403);
  });

  describe('the official conformance suite (@modelcontextprotocol/conformance), offline', () => {
    let outDir: string;
    beforeAll(() => {
      outDir = mkdtempSync(join(tmpdir(), 'atrium-conformance-'));
    });
    afterAll(() => rmSync(outDir, { recursive: true, force: true }));

    const bin = join(
      CONFORMANCE_DIR,
      (JSON.parse(readFileSync(join(CONFORMANCE_DIR, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
        .conformance,
    );

    it.each(['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'])(
      'scenario %s passes',
      async (scenario) => {
        const result = await run(
          process.execPath,
          [bin, 'server', '--url', `${publicUrl}${MCP_PATH}`, '--scenario', scenario, '-o', outDir],
          {
            env: { ...process.env, NO_COLOR: '1' },
            timeout: 90_000,
            maxBuffer: 10 * 1024 * 1024,
          },
        ).catch((error: { stdout: string; stderr: string; code: number }) => error);
        const output = `${result.stdout}\n${result.stderr}`;
        expect((result as { code?: number }).code ?? 0).toBe(0);
        expect(output).not.toMatch(/FAILURE|✗|Failed: [1-9]/);
        expect(output).toMatch(/Passed: [1-9]|SUCCESS|✓/);
      },
      120_000,
    );
  });
});
