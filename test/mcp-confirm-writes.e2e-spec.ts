import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { bearer, callTool, makeApiKey, makeUser, toolResult, type TestUser } from './support/factories.js';
import { oauthTokens } from './support/oauth-helpers.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';
const SCOPES = ['tasks:read', 'tasks:write'];

type ElicitAnswer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

/**
 * "Confirm writes" credentials (API.md, "Confirmation on the MCP door"): the JSON door refuses their write
 * tools (403 confirmation_required); over MCP 2026-07-28 a client with `elicitation` is asked and the tool
 * runs only on accept; a client that cannot be asked (no elicitation, or the stateless 2025-era door) gets
 * an isError confirmation_required. Read tools are never affected.
 */
describe('confirmWrites on API keys and OAuth grants', () => {
  let app: TestApp;
  let alice: TestUser;
  let plain: { id: string; key: string };
  let confirming: { id: string; key: string };
  const clients: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    app = await startTestApp({ env: EMBEDDED_SAFE_ENV });
    alice = await makeUser(app);
    plain = await makeApiKey(app, alice, { scopes: SCOPES });
    const res = await app.http
      .post('/api/api-keys')
      .set(bearer(alice.token))
      .send({ name: 'careful', scopes: SCOPES, expiresIn: 'never', confirmWrites: true })
      .expect(201);
    expect(res.body.data.confirmWrites).toBe(true);
    confirming = { id: res.body.data.id, key: res.body.data.key };
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await app?.close();
  });

  /** Task titles alice can see (through the key without confirmWrites, a read). */
  const titles = async (): Promise<string[]> => ((await toolResult(app, plain.key, 'list_tasks', {})) as { title: string }[]).map((t) => t.title);

  const legacyClient = async (token: string, elicitation: boolean): Promise<{ client: Client; asked: string[] }> => {
    const asked: string[] = [];
    const client = new Client({ name: 'legacy', version: '1.0.0' }, { capabilities: elicitation ? { elicitation: {} } : {} });
    if (elicitation) {
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params.message);
        return { action: 'accept', content: {} };
      });
    }
    clients.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(`${app.baseUrl}${MCP_PATH}`), { requestInit: { headers: bearer(token) } }));
    return { client, asked };
  };

  const modernClient = async (token: string, answer?: ElicitAnswer): Promise<{ client: ModernClient; asked: string[] }> => {
    const asked: string[] = [];
    const client = new ModernClient(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: answer ? { elicitation: {} } : {} },
    );
    if (answer) {
      client.setRequestHandler('elicitation/create', (request) => {
        asked.push((request.params as { message: string }).message);
        return Promise.resolve(answer) as never;
      });
    }
    clients.push(client);
    await client.connect(new ModernTransport(new URL(`${app.baseUrl}${MCP_PATH}`), { requestInit: { headers: bearer(token) } }));
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    return { client, asked };
  };

  it('the key views show confirmWrites (default false)', async () => {
    const list = await app.http.get('/api/api-keys').set(bearer(alice.token)).expect(200);
    const byId = new Map((list.body.data.items as { id: string; confirmWrites: boolean }[]).map((k) => [k.id, k.confirmWrites]));
    expect(byId.get(plain.id)).toBe(false);
    expect(byId.get(confirming.id)).toBe(true);
    const one = await app.http.get(`/api/api-keys/${confirming.id}`).set(bearer(alice.token)).expect(200);
    expect(one.body.data.confirmWrites).toBe(true);
    const bad = await app.http.post('/api/api-keys').set(bearer(alice.token)).send({ name: 'x', scopes: SCOPES, expiresIn: 'never', confirmWrites: 'yes' });
    expect(bad.status).toBe(400);
  });

  it('JSON door: a write answers 403 confirmation_required and creates nothing; a read answers 200', async () => {
    const write = await callTool(app, confirming.key, 'create_task', { title: 'json door write' });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('confirmation_required');
    const read = await callTool(app, confirming.key, 'list_tasks', {});
    expect(read.status).toBe(200);
    expect(await titles()).not.toContain('json door write');
  });

  it('a key without confirmWrites is unchanged on both doors', async () => {
    await toolResult(app, plain.key, 'create_task', { title: 'plain json write' });
    const { client } = await modernClient(plain.key);
    const created = (await client.callTool({ name: 'create_task', arguments: { title: 'plain mcp write' } })) as CallToolResult;
    expect(created.isError).toBeFalsy();
    expect(await titles()).toEqual(expect.arrayContaining(['plain json write', 'plain mcp write']));
  });

  it('MCP 2026-07-28 without elicitation: isError confirmation_required, nothing created; reads run', async () => {
    const { client } = await modernClient(confirming.key);
    const result = (await client.callTool({ name: 'create_task', arguments: { title: 'no elicitation' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });
    const read = (await client.callTool({ name: 'list_tasks', arguments: {} })) as CallToolResult;
    expect(read.isError).toBeFalsy();
    expect(await titles()).not.toContain('no elicitation');
  });

  it('MCP 2026-07-28 with elicitation, user accepts: asked once with the tool and arguments, then the task exists', async () => {
    const { client, asked } = await modernClient(confirming.key, { action: 'accept', content: {} });
    const result = (await client.callTool({ name: 'create_task', arguments: { title: 'confirmed by the user' } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ title: 'confirmed by the user', creator_id: alice.id });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('create_task');
    expect(asked[0]).toContain('confirmed by the user');
    // Reads are never confirmed.
    await client.callTool({ name: 'list_tasks', arguments: {} });
    expect(asked).toHaveLength(1);
    expect((await titles()).filter((t) => t === 'confirmed by the user')).toHaveLength(1);
  });

  it.each(['decline', 'cancel'] as const)('MCP 2026-07-28 with elicitation, user answers %s: tool error declined, nothing created', async (action) => {
    const title = `refused by ${action}`;
    const { client, asked } = await modernClient(confirming.key, { action });
    const result = (await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult;
    expect(asked).toHaveLength(1);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: 'declined' } });
    expect(await titles()).not.toContain(title);
  });

  it('a forged confirmation (an accept answer without the state the server minted) runs nothing', async () => {
    const res = await app.http
      .post(MCP_PATH)
      .set(bearer(confirming.key))
      .set('Accept', 'application/json, text/event-stream')
      .set('MCP-Protocol-Version', '2026-07-28')
      .set('Mcp-Method', 'tools/call')
      .set('Mcp-Name', 'create_task')
      .send({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'create_task',
          arguments: { title: 'forged accept' },
          inputResponses: { atrium_confirm_write: { action: 'accept', content: {} } },
          requestState: 'not-minted-here',
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
          },
        },
      });
    // The server asks again (its own requestState) instead of running the tool.
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({ resultType: 'input_required', inputRequests: { atrium_confirm_write: { method: 'elicitation/create' } } });
    expect(res.body.result.requestState).not.toBe('not-minted-here');
    expect(JSON.stringify(res.body)).not.toContain('"creator_id"');
    expect(await titles()).not.toContain('forged accept');
  });

  it('the 2025-era door (stateless) cannot ask even a client that declared elicitation: isError confirmation_required', async () => {
    const { client, asked } = await legacyClient(confirming.key, true);
    const result = (await client.callTool({ name: 'create_task', arguments: { title: 'legacy write' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });
    expect(asked).toHaveLength(0);
    const read = (await client.callTool({ name: 'list_tasks', arguments: {} })) as CallToolResult;
    expect(read.isError).toBeFalsy();
    expect(await titles()).not.toContain('legacy write');
  });

  it('an OAuth grant consented with confirmWrites behaves the same and shows it in the grant view', async () => {
    const bob = await makeUser(app);
    const tokens = await oauthTokens(app, bob, ['tasks:read', 'tasks:write'], { confirmWrites: true });
    const grants = await app.http.get('/api/oauth/grants').set(bearer(bob.token)).expect(200);
    expect(grants.body.data.items[0]).toMatchObject({ confirmWrites: true });

    const write = await callTool(app, tokens.access_token, 'create_task', { title: 'grant json write' });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('confirmation_required');
    expect((await callTool(app, tokens.access_token, 'list_tasks', {})).status).toBe(200);

    const { client: legacy } = await legacyClient(tokens.access_token, false);
    const refused = (await legacy.callTool({ name: 'create_task', arguments: { title: 'grant mcp write' } })) as CallToolResult;
    expect(refused.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });

    const { client, asked } = await modernClient(tokens.access_token, { action: 'accept', content: {} });
    const done = (await client.callTool({ name: 'create_task', arguments: { title: 'grant confirmed write' } })) as CallToolResult;
    expect(done.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    const bobTitles = ((await toolResult(app, tokens.access_token, 'list_tasks', {})) as { title: string }[]).map((t) => t.title);
    expect(bobTitles).toEqual(['grant confirmed write']);

    const other = await makeUser(app);
    const defaultGrant = await oauthTokens(app, other, ['tasks:read', 'tasks:write']);
    expect((await app.http.get('/api/oauth/grants').set(bearer(other.token)).expect(200)).body.data.items[0]).toMatchObject({ confirmWrites: false });
    expect((await callTool(app, defaultGrant.access_token, 'create_task', { title: 'default grant write' })).status).toBe(200);
  });
});
