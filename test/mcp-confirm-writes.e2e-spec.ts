import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { bearer, callTool, makeApiKey, makeUser, toolResult, type TestUser } from './support/factories.js';
import { oauthTokens } from './support/oauth-helpers.js';
import { deploymentEnv, startTestApp, type TestApp } from './support/test-app.js';

const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
/** A second instance needs the database shared, which the embedded engine cannot do. */
const itOnSharedServices = process.env.TEST_DATABASE_URL ? it : it.skip;
/** Short enough that the time-out test costs seconds; an immediate SDK answer takes milliseconds. */
const CONFIRM_TIMEOUT_MS = 2_500;
const MCP_PATH = '/api/v1/public/mcp';
const SCOPES = ['tasks:read', 'tasks:write'];

type ElicitAnswer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

/**
 * "Confirm writes" credentials (API.md, "Confirmation on the MCP door"): the JSON door refuses their write
 * tools (403 confirmation_required); over MCP 2026-07-28 a client with `elicitation` is asked and the tool
 * runs only on accept; on 2025-06-18/2025-11-25 a client that declared elicitation gets a session and is asked
 * mid-call on the SSE stream of its tools/call, its answer POSTed separately (to any instance); a client that cannot
 * be asked (no elicitation, 2025-03-26, no session) gets an isError confirmation_required. Reads are never affected.
 */
describe('confirmWrites on API keys and OAuth grants', () => {
  let app: TestApp;
  let alice: TestUser;
  let plain: { id: string; key: string };
  let confirming: { id: string; key: string };
  const clients: { close(): Promise<void> }[] = [];
  let second: TestApp | undefined;
  const deployment = {
    ...EMBEDDED_SAFE_ENV,
    ...deploymentEnv('confirm'),
    MCP_CONFIRM_TIMEOUT_MS: String(CONFIRM_TIMEOUT_MS),
  };

  beforeAll(async () => {
    app = await startTestApp({ env: deployment });
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
    await second?.close();
    await app?.close();
  });

  /** Task titles alice can see (through the key without confirmWrites, a read). */
  const titles = async (): Promise<string[]> =>
    ((await toolResult(app, plain.key, 'list_tasks', {})) as { title: string }[]).map((t) => t.title);

  interface LegacyOptions {
    /** How the user answers `elicitation/create`; 'never' leaves the question open (until the server cancels it). */
    answer?: ElicitAnswer['action'] | 'never';
    /** The revision to negotiate: the v1 SDK client always asks for its latest, so the initialize is rewritten. */
    version?: '2025-06-18' | '2025-11-25' | '2025-03-26';
    /** Where the client's answers to the server's requests are POSTed (another instance); default: the same URL. */
    answersTo?: string;
    baseUrl?: string;
    sessionId?: string;
  }
  interface LegacyClient {
    client: Client;
    transport: StreamableHTTPClientTransport;
    asked: string[];
    /** The JSON-RPC ids of the server's elicitation requests. */
    askedIds: (string | number)[];
    /** The bodies of the client's POSTed answers (to replay them). */
    answers: string[];
  }

  /** The official v1 SDK client over Streamable HTTP, as people use it; fetch is wrapped only to steer the revision and answers. */
  const legacyClient = async (token: string, options: LegacyOptions = {}): Promise<LegacyClient> => {
    const asked: string[] = [];
    const askedIds: (string | number)[] = [];
    const answers: string[] = [];
    const client = new Client(
      { name: 'legacy', version: '1.0.0' },
      { capabilities: options.answer ? { elicitation: {} } : {} },
    );
    if (options.answer) {
      const action = options.answer;
      client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
        asked.push(request.params.message);
        askedIds.push(extra.requestId);
        if (action === 'never')
          return new Promise<never>((_resolve, reject) =>
            extra.signal.addEventListener('abort', () => reject(new Error('cancelled'))),
          );
        return { action, ...(action === 'accept' ? { content: {} } : {}) };
      });
    }
    const url = `${options.baseUrl ?? app.baseUrl}${MCP_PATH}`;
    const fetchVia = async (target: string | URL, init?: RequestInit): Promise<Response> => {
      let body = init?.body;
      let to = target;
      if (typeof body === 'string' && init?.method === 'POST') {
        const message = JSON.parse(body) as { method?: string; params?: { protocolVersion?: string } };
        if (message.method === 'initialize' && options.version)
          body = JSON.stringify({ ...message, params: { ...message.params, protocolVersion: options.version } });
        if (message.method === undefined) {
          answers.push(body);
          if (options.answersTo) to = `${options.answersTo}${MCP_PATH}`;
        }
      }
      return fetch(to, { ...init, body });
    };
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: bearer(token) },
      fetch: fetchVia,
      sessionId: options.sessionId,
    });
    clients.push(client);
    await client.connect(transport);
    return { client, transport, asked, askedIds, answers };
  };

  /** A raw JSON-RPC POST on the 2025-era door. */
  const rawPost = (token: string, body: unknown, sessionId?: string, baseUrl = app.baseUrl) =>
    fetch(`${baseUrl}${MCP_PATH}`, {
      method: 'POST',
      headers: {
        ...bearer(token),
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2025-11-25',
        ...(sessionId ? { 'Mcp-Session-Id': sessionId } : {}),
      },
      body: JSON.stringify(body),
    });

  const modernClient = async (
    token: string,
    answer?: ElicitAnswer,
  ): Promise<{ client: ModernClient; asked: string[] }> => {
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
    await client.connect(
      new ModernTransport(new URL(`${app.baseUrl}${MCP_PATH}`), { requestInit: { headers: bearer(token) } }),
    );
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    return { client, asked };
  };

  it('the key views show confirmWrites (default false)', async () => {
    const list = await app.http.get('/api/api-keys').set(bearer(alice.token)).expect(200);
    const byId = new Map(
      (list.body.data.items as { id: string; confirmWrites: boolean }[]).map((k) => [k.id, k.confirmWrites]),
    );
    expect(byId.get(plain.id)).toBe(false);
    expect(byId.get(confirming.id)).toBe(true);
    const one = await app.http.get(`/api/api-keys/${confirming.id}`).set(bearer(alice.token)).expect(200);
    expect(one.body.data.confirmWrites).toBe(true);
    const bad = await app.http
      .post('/api/api-keys')
      .set(bearer(alice.token))
      .send({ name: 'x', scopes: SCOPES, expiresIn: 'never', confirmWrites: 'yes' });
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
    const created = (await client.callTool({
      name: 'create_task',
      arguments: { title: 'plain mcp write' },
    })) as CallToolResult;
    expect(created.isError).toBeFalsy();
    expect(await titles()).toEqual(expect.arrayContaining(['plain json write', 'plain mcp write']));
  });

  it('MCP 2026-07-28 without elicitation: isError confirmation_required, nothing created; reads run', async () => {
    const { client } = await modernClient(confirming.key);
    const result = (await client.callTool({
      name: 'create_task',
      arguments: { title: 'no elicitation' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });
    const read = (await client.callTool({ name: 'list_tasks', arguments: {} })) as CallToolResult;
    expect(read.isError).toBeFalsy();
    expect(await titles()).not.toContain('no elicitation');
  });

  it('MCP 2026-07-28 with elicitation, user accepts: asked once with the tool and arguments, then the task exists', async () => {
    const { client, asked } = await modernClient(confirming.key, { action: 'accept', content: {} });
    const result = (await client.callTool({
      name: 'create_task',
      arguments: { title: 'confirmed by the user' },
    })) as CallToolResult;
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

  it.each(['decline', 'cancel'] as const)(
    'MCP 2026-07-28 with elicitation, user answers %s: tool error declined, nothing created',
    async (action) => {
      const title = `refused by ${action}`;
      const { client, asked } = await modernClient(confirming.key, { action });
      const result = (await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult;
      expect(asked).toHaveLength(1);
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ error: { code: 'declined' } });
      expect(await titles()).not.toContain(title);
    },
  );

  /** A raw 2026-07-28 tools/call of create_task, optionally answering a confirmation with a requestState. */
  const modernCall = (token: string, title: string, confirm?: { state: string; action?: string }) =>
    app.http
      .post(MCP_PATH)
      .set(bearer(token))
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
          arguments: { title },
          ...(confirm
            ? {
                inputResponses: { atrium_confirm_write: { action: confirm.action ?? 'accept', content: {} } },
                requestState: confirm.state,
              }
            : {}),
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
          },
        },
      });

  /** Asks for a confirmation of create_task(title) and returns the requestState the server minted. */
  const mintedState = async (token: string, title: string): Promise<string> => {
    const asked = await modernCall(token, title).expect(200);
    expect(asked.body.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { atrium_confirm_write: { method: 'elicitation/create' } },
    });
    return asked.body.result.requestState as string;
  };

  it('a forged or tampered requestState runs nothing: a JSON-RPC error, no task', async () => {
    const forged = await modernCall(confirming.key, 'forged accept', { state: 'not-minted-here' });
    expect(forged.body.error).toMatchObject({ code: -32602 });
    const state = await mintedState(confirming.key, 'tampered accept');
    // One character changed for certain (a replacement chosen by the final character could equal the one it replaces).
    const flipped = `${state.slice(0, -2)}${state.at(-2) === 'A' ? 'B' : 'A'}${state.slice(-1)}`;
    expect(flipped).not.toBe(state);
    for (const tampered of [`${state}x`, flipped]) {
      const res = await modernCall(confirming.key, 'tampered accept', { state: tampered });
      expect(res.body.error).toMatchObject({ code: -32602 });
      expect(JSON.stringify(res.body)).not.toContain('"creator_id"');
    }
    expect(await titles()).not.toContain('forged accept');
    expect(await titles()).not.toContain('tampered accept');
  });

  it('a requestState accepted three times creates the task once; the replays run nothing', async () => {
    const title = 'confirmed once only';
    const state = await mintedState(confirming.key, title);
    const answers = [];
    for (let i = 0; i < 3; i += 1)
      answers.push((await modernCall(confirming.key, title, { state }).expect(200)).body.result);
    expect(answers[0]).toMatchObject({ structuredContent: { title, creator_id: alice.id } });
    for (const replay of answers.slice(1))
      expect(replay).toMatchObject({ isError: true, structuredContent: { error: { code: 'confirmation_required' } } });
    expect((await titles()).filter((t) => t === title)).toHaveLength(1);
    // Sent at the same moment, still once.
    const raced = 'confirmed once under a race';
    const racedState = await mintedState(confirming.key, raced);
    await Promise.all([1, 2, 3].map(() => modernCall(confirming.key, raced, { state: racedState }).expect(200)));
    expect((await titles()).filter((t) => t === raced)).toHaveLength(1);
  });

  it('a requestState counts only for its credential and its arguments', async () => {
    const state = await mintedState(confirming.key, 'bound to its call');
    // Other arguments: the user was not shown this call, so it is asked anew and nothing runs.
    const other = await modernCall(confirming.key, 'another title', { state }).expect(200);
    expect(other.body.result).toMatchObject({ resultType: 'input_required' });
    // Another credential of the same user: the state is refused outright.
    const res = await app.http
      .post('/api/api-keys')
      .set(bearer(alice.token))
      .send({ name: 'careful too', scopes: SCOPES, expiresIn: 'never', confirmWrites: true })
      .expect(201);
    const foreign = await modernCall(res.body.data.key as string, 'bound to its call', { state });
    expect(foreign.body.error).toMatchObject({ code: -32602 });
    expect(await titles()).not.toContain('bound to its call');
    expect(await titles()).not.toContain('another title');
  });

  it.each(['2025-06-18', '2025-11-25'] as const)(
    '2025-era %s, v1 SDK client with elicitation, user accepts: a session, asked once on the SSE stream, the task created once',
    async (version) => {
      const title = `legacy accept ${version}`;
      const { client, transport, asked } = await legacyClient(confirming.key, { answer: 'accept', version });
      expect(client.getServerVersion()).toMatchObject({ name: 'atrium' });
      expect(transport.protocolVersion).toBe(version);
      expect(transport.sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const result = (await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ title, creator_id: alice.id });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('create_task');
      expect(asked[0]).toContain(title);
      // Reads are never confirmed (and answer JSON as before).
      expect(((await client.callTool({ name: 'list_tasks', arguments: {} })) as CallToolResult).isError).toBeFalsy();
      expect(asked).toHaveLength(1);
      expect((await titles()).filter((t) => t === title)).toHaveLength(1);
    },
  );

  it.each(['decline', 'cancel'] as const)(
    '2025-era session, user answers %s: tool error declined, nothing created',
    async (action) => {
      const title = `legacy ${action}`;
      const { client, asked } = await legacyClient(confirming.key, { answer: action, version: '2025-06-18' });
      const result = (await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult;
      expect(asked).toHaveLength(1);
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ error: { code: 'declined' } });
      expect(await titles()).not.toContain(title);
    },
  );

  it('2025-era session, nobody answers: confirmation_required after MCP_CONFIRM_TIMEOUT_MS, nothing created, the late answer refused', async () => {
    const title = 'legacy unanswered';
    const { client, transport, asked, askedIds } = await legacyClient(confirming.key, { answer: 'never' });
    const started = Date.now();
    const result = (await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult;
    expect(Date.now() - started).toBeGreaterThanOrEqual(CONFIRM_TIMEOUT_MS - 100);
    expect(asked).toHaveLength(1);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      error: { code: 'confirmation_required', message: expect.stringContaining('nobody answered') },
    });
    const late = await rawPost(
      confirming.key,
      { jsonrpc: '2.0', id: askedIds[0], result: { action: 'accept', content: {} } },
      transport.sessionId,
    );
    expect(late.status).toBe(400);
    expect(await titles()).not.toContain(title);
  }, 30_000);

  it('a 2025-era client without elicitation gets only a label session and confirmation_required; 2025-03-26 too, even with elicitation', async () => {
    const { client, transport } = await legacyClient(confirming.key);
    expect(transport.sessionId).toMatch(/^l1\./);
    const refused = (await client.callTool({
      name: 'create_task',
      arguments: { title: 'legacy no elicitation' },
    })) as CallToolResult;
    expect(refused.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });
    expect(((await client.callTool({ name: 'list_tasks', arguments: {} })) as CallToolResult).isError).toBeFalsy();

    const old = await legacyClient(confirming.key, { answer: 'accept', version: '2025-03-26' });
    expect(old.transport.protocolVersion).toBe('2025-03-26');
    expect(old.transport.sessionId).toMatch(/^l1\./);
    const oldResult = (await old.client.callTool({
      name: 'create_task',
      arguments: { title: 'legacy 2025-03-26' },
    })) as CallToolResult;
    expect(oldResult.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });
    expect(old.asked).toHaveLength(0);
    expect(await titles()).not.toEqual(expect.arrayContaining(['legacy no elicitation']));
    expect(await titles()).not.toContain('legacy 2025-03-26');
  });

  it("a session is its credential's: another key presenting it, a forged or malformed id → 404; the answer is usable once; DELETE ends it", async () => {
    const title = 'legacy replayed accept';
    const { client, transport, answers } = await legacyClient(confirming.key, { answer: 'accept' });
    const sessionId = transport.sessionId!;
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    expect((await rawPost(confirming.key, list, sessionId)).status).toBe(200);
    for (const [key, id] of [
      [plain.key, sessionId],
      [confirming.key, 'A'.repeat(43)],
      [confirming.key, 'not a session id'],
      [confirming.key, `${sessionId}x`],
    ] as const) {
      const res = await rawPost(key, list, id);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
    }

    expect(
      ((await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult).isError,
    ).toBeFalsy();
    expect(answers).toHaveLength(1);
    // The same answer again (a replay), an answer to an id never asked, malformed answers: 400, nothing runs.
    const replay = await rawPost(confirming.key, JSON.parse(answers[0]), sessionId);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
    const asked = JSON.parse(answers[0]) as { id: string };
    for (const body of [
      { jsonrpc: '2.0', id: 'atrium-confirm-never-asked', result: { action: 'accept', content: {} } },
      { jsonrpc: '2.0', id: 12345, result: { action: 'accept' } },
      { jsonrpc: '2.0', id: asked.id, result: { action: 'maybe' } },
      { jsonrpc: '2.0', id: asked.id, result: 'accept' },
      { jsonrpc: '2.0', id: asked.id, error: { code: -1, message: 'no' } },
    ]) {
      const res = await rawPost(confirming.key, body, sessionId);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
    }
    expect((await titles()).filter((t) => t === title)).toHaveLength(1);

    // DELETE needs the credential that opened it, then ends the session everywhere.
    const del = (key: string) =>
      fetch(`${app.baseUrl}${MCP_PATH}`, {
        method: 'DELETE',
        headers: { ...bearer(key), 'Mcp-Session-Id': sessionId },
      });
    expect((await del(plain.key)).status).toBe(404);
    await transport.terminateSession();
    expect(transport.sessionId).toBeUndefined();
    expect((await rawPost(confirming.key, list, sessionId)).status).toBe(404);
    expect((await del(confirming.key)).status).toBe(404);
    expect(
      (
        await fetch(`${app.baseUrl}${MCP_PATH}`, {
          method: 'DELETE',
          headers: { ...bearer(confirming.key), 'Mcp-Session-Id': sessionId },
        })
      ).status,
    ).toBe(404);
  });

  itOnSharedServices(
    'a session opened on one instance serves on another, and the answer may land on the first',
    async () => {
      // Closed in afterAll with the first instance, whose database it shares.
      second = await startTestApp({ env: deployment, database: app.database });
      {
        const opened = await legacyClient(confirming.key, { answer: 'accept' });
        const title = 'legacy across instances';
        // The call waits on the second instance; the client's answer is POSTed to the first.
        const { client, asked } = await legacyClient(confirming.key, {
          answer: 'accept',
          baseUrl: second.baseUrl,
          sessionId: opened.transport.sessionId,
          answersTo: app.baseUrl,
        });
        const result = (await client.callTool({ name: 'create_task', arguments: { title } })) as CallToolResult;
        expect(result.isError).toBeFalsy();
        expect(asked).toHaveLength(1);
        expect((await titles()).filter((t) => t === title)).toHaveLength(1);
        expect(
          (
            await rawPost(
              plain.key,
              { jsonrpc: '2.0', id: 1, method: 'tools/list' },
              opened.transport.sessionId,
              second.baseUrl,
            )
          ).status,
        ).toBe(404);
      }
    },
    120_000,
  );

  it('an OAuth grant consented with confirmWrites behaves the same and shows it in the grant view', async () => {
    const bob = await makeUser(app);
    const tokens = await oauthTokens(app, bob, ['tasks:read', 'tasks:write'], { confirmWrites: true });
    const grants = await app.http.get('/api/oauth/grants').set(bearer(bob.token)).expect(200);
    expect(grants.body.data.items[0]).toMatchObject({ confirmWrites: true });

    const write = await callTool(app, tokens.access_token, 'create_task', { title: 'grant json write' });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('confirmation_required');
    expect((await callTool(app, tokens.access_token, 'list_tasks', {})).status).toBe(200);

    const { client: legacy } = await legacyClient(tokens.access_token);
    const refused = (await legacy.callTool({
      name: 'create_task',
      arguments: { title: 'grant mcp write' },
    })) as CallToolResult;
    expect(refused.structuredContent).toMatchObject({ error: { code: 'confirmation_required' } });

    const { client, asked } = await modernClient(tokens.access_token, { action: 'accept', content: {} });
    const done = (await client.callTool({
      name: 'create_task',
      arguments: { title: 'grant confirmed write' },
    })) as CallToolResult;
    expect(done.isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    const bobTitles = ((await toolResult(app, tokens.access_token, 'list_tasks', {})) as { title: string }[]).map(
      (t) => t.title,
    );
    expect(bobTitles).toEqual(['grant confirmed write']);

    const other = await makeUser(app);
    const defaultGrant = await oauthTokens(app, other, ['tasks:read', 'tasks:write']);
    expect(
      (await app.http.get('/api/oauth/grants').set(bearer(other.token)).expect(200)).body.data.items[0],
    ).toMatchObject({ confirmWrites: false });
    expect(
      (await callTool(app, defaultGrant.access_token, 'create_task', { title: 'default grant write' })).status,
    ).toBe(200);
  });
});
