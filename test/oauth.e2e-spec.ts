import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createServer, type Server } from 'node:http';
import { bearer, makeApiKey, makeUser, type TestUser } from './support/factories.js';
import {
  approveConsent,
  authorizeQuery,
  codeFor,
  consent,
  consentRequestOf,
  exchange,
  freePort,
  oauthTokens,
  pkcePair,
  REDIRECT_URI,
  registerPublicClient,
  tokenRequest,
} from './support/oauth-helpers.js';
import {
  createTestDatabase,
  deploymentEnv,
  describeOnSharedServices,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from './support/test-app.js';

const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };
const MCP_PATH = '/api/v1/public/mcp';

/** The SDK's OAuthClientProvider as a desktop client implements it, keeping everything in memory. */
class MemoryProvider implements OAuthClientProvider {
  information?: OAuthClientInformationMixed;
  stored?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;

  constructor(private readonly scope?: string) {}

  get redirectUrl(): string {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK e2e client',
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    this.stored = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no verifier');
    return this.verifier;
  }
}

describe('OAuth 2.1 for MCP clients', () => {
  let app: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let metadataServer: Server;
  let metadataBase: string;
  /** What the local "client metadata" host answers, by path. */
  const documents = new Map<string, (res: import('node:http').ServerResponse) => void>();
  const clients: Client[] = [];

  beforeAll(async () => {
    const port = await freePort();
    metadataServer = createServer((req, res) => {
      const handler = documents.get(req.url ?? '');
      if (handler) handler(res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => metadataServer.listen(0, '127.0.0.1', resolve));
    metadataBase = `http://127.0.0.1:${(metadataServer.address() as { port: number }).port}`;
    app = await startTestApp({
      port,
      env: {
        ...EMBEDDED_SAFE_ENV,
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        OAUTH_ALLOW_PRIVATE_CLIENT_METADATA: 'true',
      },
    });
    alice = await makeUser(app);
    bob = await makeUser(app);
  }, 180_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await app?.close();
    metadataServer?.closeAllConnections();
    await new Promise((resolve) => metadataServer?.close(resolve));
  });

  describe('discovery', () => {
    it('serves RFC 9728 protected-resource metadata with and without the path suffix', async () => {
      for (const path of [
        '/.well-known/oauth-protected-resource/api/v1/public/mcp',
        '/.well-known/oauth-protected-resource',
      ]) {
        const res = await app.http.get(path).expect(200);
        expect(res.body).toEqual(
          expect.objectContaining({
            resource: `${app.baseUrl}${MCP_PATH}`,
            authorization_servers: [app.baseUrl],
            scopes_supported: ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'],
            bearer_methods_supported: ['header'],
          }),
        );
      }
    });

    it('serves RFC 8414 authorization-server metadata', async () => {
      const res = await app.http.get('/.well-known/oauth-authorization-server').expect(200);
      expect(res.body).toMatchObject({
        issuer: app.baseUrl,
        authorization_endpoint: `${app.baseUrl}/oauth/authorize`,
        token_endpoint: `${app.baseUrl}/oauth/token`,
        registration_endpoint: `${app.baseUrl}/oauth/register`,
        revocation_endpoint: `${app.baseUrl}/oauth/revoke`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
        client_id_metadata_document_supported: true,
      });
    });

    it('browser-based clients may read the metadata and call the token endpoint from any origin (CORS preflight)', async () => {
      for (const path of [
        '/.well-known/oauth-protected-resource/api/v1/public/mcp',
        '/.well-known/oauth-authorization-server',
        '/oauth/register',
        '/oauth/token',
        '/oauth/revoke',
      ]) {
        const res = await app.http
          .options(path)
          .set('Origin', 'https://inspector.example.com')
          .set('Access-Control-Request-Method', 'POST')
          .expect(204);
        expect(res.headers['access-control-allow-origin']).toBe('*');
        expect(res.headers['access-control-allow-headers']).toContain('Authorization');
      }
      const metadata = await app.http
        .get('/.well-known/oauth-authorization-server')
        .set('Origin', 'https://inspector.example.com')
        .expect(200);
      expect(metadata.headers['access-control-allow-origin']).toBe('*');
    });

    it('every Area A 401 points at the metadata; invalid_token only when a credential was sent', async () => {
      const metadata = `resource_metadata="${app.baseUrl}/.well-known/oauth-protected-resource/api/v1/public/mcp"`;
      const none = await app.http.get(`${MCP_PATH}/tools`).expect(401);
      expect(none.headers['www-authenticate']).toBe(`Bearer ${metadata}`);
      const wrong = await app.http.get(`${MCP_PATH}/tools`).set(bearer('atr_nope')).expect(401);
      expect(wrong.headers['www-authenticate']).toBe(`Bearer error="invalid_token", ${metadata}`);
      const mcp = await app.http
        .post(MCP_PATH)
        .set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
        .expect(401);
      expect(mcp.headers['www-authenticate']).toBe(`Bearer ${metadata}`);
    });

    it('a 403 insufficient_scope names the scope for step-up', async () => {
      const key = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
      const res = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(key.key))
        .send({ name: 'create_task', arguments: { title: 'x' } })
        .expect(403);
      expect(res.body.error.code).toBe('insufficient_scope');
      expect(res.headers['www-authenticate']).toBe(
        `Bearer error="insufficient_scope", scope="tasks:write", resource_metadata="${app.baseUrl}/.well-known/oauth-protected-resource/api/v1/public/mcp"`,
      );
    });
  });

  describe("the official SDK client's own OAuth flow", () => {
    it('discovers, registers, sends the user to consent, exchanges the code, then lists and calls tools with the token', async () => {
      const provider = new MemoryProvider('tasks:read tasks:write');
      const url = new URL(`${app.baseUrl}${MCP_PATH}`);
      const first = new Client({ name: 'sdk-oauth', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
      await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
      expect(provider.information?.client_id).toMatch(/^atc_/);
      expect(provider.authorizationUrl?.pathname).toBe('/oauth/authorize');
      expect(provider.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
      expect(provider.authorizationUrl?.searchParams.get('resource')).toBe(url.toString());

      // The SDK asks for every scope the metadata lists; the user narrows them on the consent page.
      expect(provider.authorizationUrl?.searchParams.get('scope')?.split(' ')).toContain('tasks:write');
      const redirect = await consent(app, alice, provider.authorizationUrl!, { scopes: ['tasks:read', 'tasks:write'] });
      expect(`${redirect.origin}${redirect.pathname}`).toBe(REDIRECT_URI);
      expect(redirect.searchParams.get('state')).toBe(provider.authorizationUrl!.searchParams.get('state'));
      await transport.finishAuth(redirect.searchParams.get('code')!);
      expect(provider.stored?.access_token).toMatch(/^ato_/);
      expect(provider.stored?.refresh_token).toMatch(/^atf_/);

      const client = new Client({ name: 'sdk-oauth', version: '1.0.0' });
      clients.push(client);
      await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual([
        'list_tasks',
        'get_task',
        'search_tasks',
        'task_stats',
        'create_task',
        'update_task',
        'delete_task',
      ]);
      const created = (await client.callTool({
        name: 'create_task',
        arguments: { title: 'via OAuth', priority: 'high' },
      })) as CallToolResult;
      expect(created.isError).toBeFalsy();
      expect(created.structuredContent).toMatchObject({ title: 'via OAuth', creator_id: alice.id });

      // The access token dies (RFC 7009 revocation); the SDK refreshes on the 401 with its refresh token
      // (rotated: a new pair) and the next call goes through without the user.
      const before = provider.stored!;
      await app.http
        .post('/oauth/revoke')
        .type('form')
        .send({ token: before.access_token, client_id: provider.information!.client_id })
        .expect(200);
      const refreshed = new Client({ name: 'sdk-oauth', version: '1.0.0' });
      clients.push(refreshed);
      await refreshed.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
      expect((await refreshed.listTools()).tools).toHaveLength(7);
      expect(provider.stored?.access_token).not.toBe(before.access_token);
      expect(provider.stored?.refresh_token).not.toBe(before.refresh_token);

      // The grant is a connected app on the account, counted like a key.
      const grants = await app.http.get('/api/oauth/grants').set(bearer(alice.token)).expect(200);
      expect(grants.body.data.items).toHaveLength(1);
      expect(grants.body.data.items[0]).toMatchObject({
        clientName: 'SDK e2e client',
        scopes: ['tasks:read', 'tasks:write'],
        projectIds: null,
      });
      expect(grants.body.data.items[0].callCount).toBeGreaterThanOrEqual(3);
      expect(grants.body.data.nextCursor).toBeNull();
      // Bob sees none of Alice's apps.
      const bobs = await app.http.get('/api/oauth/grants').set(bearer(bob.token)).expect(200);
      expect(bobs.body.data.items).toEqual([]);
    }, 60_000);
  });

  describe('tokens act like API keys', () => {
    it('scopes narrowed at consent, project pins, owner bounds; never on Area B', async () => {
      const project = (
        await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'pinned' }).expect(201)
      ).body.data;
      const other = (
        await app.http.post('/api/projects').set(bearer(alice.token)).send({ name: 'not pinned' }).expect(201)
      ).body.data;
      const tokens = await oauthTokens(app, alice, ['tasks:read', 'tasks:write', 'docs:read'], {
        scopes: ['tasks:read', 'tasks:write'],
        projectIds: [project.id],
      });
      expect(tokens.scope).toBe('tasks:read tasks:write');
      const listed = await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(200);
      expect(listed.body.scopes).toEqual(['tasks:read', 'tasks:write']);
      // Pinned: Alice's own task in another project is not_found to this token, as to a pinned key.
      const aliceKey = await makeApiKey(app, alice, { scopes: ['tasks:write'] });
      const elsewhere = (
        await app.http
          .post(`${MCP_PATH}/call`)
          .set(bearer(aliceKey.key))
          .send({ name: 'create_task', arguments: { title: 'other project', project_id: other.id } })
          .expect(200)
      ).body.result;
      const pinned = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(tokens.access_token))
        .send({ name: 'get_task', arguments: { task_id: elsewhere.id } })
        .expect(404);
      expect(pinned.body.error.code).toBe('not_found');
      const inside = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(tokens.access_token))
        .send({ name: 'create_task', arguments: { title: 'in project', project_id: project.id } })
        .expect(200);
      expect(inside.body.result).toMatchObject({ project_id: project.id, creator_id: alice.id });
      const docs = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(tokens.access_token))
        .send({ name: 'list_documents', arguments: {} })
        .expect(403);
      expect(docs.body.error.code).toBe('insufficient_scope');
      // Bob's task is not visible to Alice's token.
      const bobKey = await makeApiKey(app, bob, { scopes: ['tasks:write'] });
      const bobTask = (
        await app.http
          .post(`${MCP_PATH}/call`)
          .set(bearer(bobKey.key))
          .send({ name: 'create_task', arguments: { title: 'bob only' } })
          .expect(200)
      ).body.result;
      const hidden = await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(tokens.access_token))
        .send({ name: 'get_task', arguments: { task_id: bobTask.id } })
        .expect(404);
      expect(hidden.body.error.code).toBe('not_found');
      // Area B refuses both tokens with a 401 naming the credential it expects.
      for (const token of [tokens.access_token, tokens.refresh_token]) {
        const areaB = await app.http.get('/api/projects').set(bearer(token)).expect(401);
        expect(areaB.body.error.message).toMatch(/OAuth tokens .* only on the MCP endpoint/);
      }
      const refreshOnA = await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.refresh_token)).expect(401);
      expect(refreshOnA.body.error.message).toMatch(/refresh token/);
    });

    it('allowedIps chosen at consent: the grant works from inside the ranges, 403 ip_not_allowed elsewhere; a bad range is 400', async () => {
      const call = (token: string) =>
        app.http.post(`${MCP_PATH}/call`).set(bearer(token)).send({ name: 'list_tasks', arguments: {} });
      const local = await oauthTokens(app, alice, ['tasks:read'], { allowedIps: ['127.0.0.1', '::1/128'] });
      await call(local.access_token).expect(200);
      const remote = await oauthTokens(app, alice, ['tasks:read'], { allowedIps: ['192.0.2.0/24'] });
      const refused = await call(remote.access_token).expect(403);
      expect(refused.body.error).toMatchObject({ code: 'ip_not_allowed', details: { rule: 'credential.allowedIps' } });
      const mcp = await app.http
        .post(MCP_PATH)
        .set('Accept', 'application/json, text/event-stream')
        .set(bearer(remote.access_token))
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
        .expect(403);
      expect(mcp.body.error.data.error.code).toBe('ip_not_allowed');
      // The owner sees the ranges, canonical, on the grant; a grant without them shows null.
      const grants = (await app.http.get('/api/oauth/grants?limit=200').set(bearer(alice.token)).expect(200)).body.data
        .items as { clientId: string; allowedIps: string[] | null }[];
      const shown = (clientId: string) => grants.find((grant) => grant.clientId === clientId)?.allowedIps;
      expect(shown(local.clientId)).toEqual(['127.0.0.1/32', '::1/128']);
      expect(shown(remote.clientId)).toEqual(['192.0.2.0/24']);
      const plain = await oauthTokens(app, alice, ['tasks:read']);
      const again = (await app.http.get('/api/oauth/grants?limit=200').set(bearer(alice.token)).expect(200)).body.data
        .items as { clientId: string; allowedIps: string[] | null }[];
      expect(again.find((grant) => grant.clientId === plain.clientId)?.allowedIps).toBeNull();
      // Bad ranges are refused at consent as a key's are: 400 naming allowedIps, never a 500, and no code.
      const clientId = await registerPublicClient(app);
      const { challenge } = pkcePair();
      const page = await app.http.get(
        `/oauth/authorize?${authorizeQuery(clientId, challenge, { scope: 'tasks:read' })}`,
      );
      const request = consentRequestOf(page.text);
      for (const allowedIps of [
        ['300.1.1.1'],
        ['10.0.0.0/99'],
        'everywhere',
        [42],
        Array.from({ length: 101 }, () => '::1'),
      ]) {
        const res = await approveConsent(app, alice, request, { allowedIps }).expect(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(JSON.stringify(res.body.error)).toMatch(/allowedIps/);
      }
    });

    it("each call lands in the grant's usage log with its tool and status, like a key's", async () => {
      const tokens = await oauthTokens(app, alice, ['tasks:read']);
      await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(tokens.access_token))
        .send({ name: 'list_tasks', arguments: {} })
        .expect(200);
      await app.http
        .post(`${MCP_PATH}/call`)
        .set(bearer(tokens.access_token))
        .send({ name: 'get_task', arguments: { task_id: '00000000-0000-4000-8000-000000000000' } })
        .expect(404);
      const { Client: PgClient } = await import('pg');
      const db = new PgClient({ connectionString: app.database.url });
      await db.connect();
      try {
        let rows: { tool: string; status: number }[] = [];
        // Written behind in 200 ms batches: poll rather than sleep.
        for (let i = 0; i < 50 && rows.length < 2; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          rows = (
            await db.query(
              `SELECT u.tool, u.status FROM oauth_grant_usage u JOIN oauth_grants g ON g.id = u.grant_id WHERE g.client_id = $1 ORDER BY u.id`,
              [tokens.clientId],
            )
          ).rows;
        }
        expect(rows).toHaveLength(2);
        expect(rows).toEqual(
          expect.arrayContaining([
            { tool: 'list_tasks', status: 200 },
            { tool: 'get_task', status: 404 },
          ]),
        );
      } finally {
        await db.end();
      }
    });

    it('deleting the grant stops its access token at once; the refresh token is dead too', async () => {
      const tokens = await oauthTokens(app, alice, ['tasks:read']);
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(200);
      const grants = (await app.http.get('/api/oauth/grants').set(bearer(alice.token)).expect(200)).body.data.items as {
        id: string;
        clientId: string;
      }[];
      const grant = grants.find((g) => g.clientId === tokens.clientId)!;
      await app.http.delete(`/api/oauth/grants/${grant.id}`).set(bearer(bob.token)).expect(404);
      await app.http.delete(`/api/oauth/grants/${grant.id}`).set(bearer(alice.token)).expect(200);
      const revoked = await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(401);
      expect(revoked.body.error.code).toBe('revoked_api_key');
      expect(revoked.headers['www-authenticate']).toContain('error="invalid_token"');
      const refresh = await tokenRequest(app, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.clientId,
      }).expect(400);
      expect(refresh.body.error).toBe('invalid_grant');
      const after = (await app.http.get('/api/oauth/grants').set(bearer(alice.token)).expect(200)).body.data.items as {
        id: string;
      }[];
      expect(after.map((g) => g.id)).not.toContain(grant.id);
    });

    it('refresh rotates; presenting a used refresh token revokes the whole grant', async () => {
      const tokens = await oauthTokens(app, alice, ['tasks:read']);
      const rotated = await tokenRequest(app, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.clientId,
      }).expect(200);
      expect(rotated.headers['cache-control']).toBe('no-store');
      expect(rotated.body.refresh_token).not.toBe(tokens.refresh_token);
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(rotated.body.access_token)).expect(200);
      const reuse = await tokenRequest(app, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.clientId,
      }).expect(400);
      expect(reuse.body).toMatchObject({ error: 'invalid_grant' });
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(rotated.body.access_token)).expect(401);
      await tokenRequest(app, {
        grant_type: 'refresh_token',
        refresh_token: rotated.body.refresh_token,
        client_id: tokens.clientId,
      }).expect(400);
    });

    it('RFC 7009 revocation of an access token; unknown tokens answer 200 too', async () => {
      const tokens = await oauthTokens(app, alice, ['tasks:read']);
      await app.http
        .post('/oauth/revoke')
        .type('form')
        .send({ token: tokens.access_token, client_id: tokens.clientId })
        .expect(200);
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(401);
      await app.http
        .post('/oauth/revoke')
        .type('form')
        .send({ token: 'ato_unknown', client_id: tokens.clientId })
        .expect(200);
      await app.http
        .post('/oauth/revoke')
        .type('form')
        .send({ token: tokens.refresh_token, client_id: tokens.clientId })
        .expect(200);
      await tokenRequest(app, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.clientId,
      }).expect(400);
    });
  });

  describe('registration', () => {
    it.each([
      ['http on a public host', 'http://example.com/cb'],
      ['javascript:', 'javascript:alert(1)'],
      ['data:', 'data:text/html,hi'],
      ['file:', 'file:///etc/passwd'],
      ['a fragment', 'https://app.example.com/cb#x'],
      ['not a URL', 'nope'],
    ])('refuses a redirect URI that is %s with invalid_redirect_uri', async (_label, uri) => {
      const res = await app.http
        .post('/oauth/register')
        .send({ redirect_uris: [uri] })
        .expect(400);
      expect(res.body.error).toBe('invalid_redirect_uri');
    });

    it('accepts https, loopback http and a private-use scheme; a confidential client gets its secret once', async () => {
      const res = await app.http
        .post('/oauth/register')
        .send({
          client_name: 'Native',
          redirect_uris: [
            'https://app.example.com/cb',
            'http://[::1]/cb',
            'com.example.app:/oauth',
            'cursor://anysphere.cursor-mcp/oauth/callback',
          ],
        })
        .expect(201);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toMatchObject({
        client_id: expect.stringMatching(/^atc_/),
        client_secret: expect.stringMatching(/^atcs_/),
        token_endpoint_auth_method: 'client_secret_basic',
      });
      // The secret authenticates with Basic; a wrong one is invalid_client 401.
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, alice, res.body.client_id, challenge, {
        redirectUri: 'https://app.example.com/cb',
      });
      const basic = (secret: string) => `Basic ${Buffer.from(`${res.body.client_id}:${secret}`).toString('base64')}`;
      const wrong = await app.http
        .post('/oauth/token')
        .type('form')
        .set('Authorization', basic('atcs_wrong'))
        .send({
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          redirect_uri: 'https://app.example.com/cb',
        })
        .expect(401);
      expect(wrong.body.error).toBe('invalid_client');
      const noSecret = await tokenRequest(app, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: res.body.client_id,
        redirect_uri: 'https://app.example.com/cb',
      }).expect(401);
      expect(noSecret.body.error).toBe('invalid_client');
      const { verifier: v2, challenge: c2 } = pkcePair();
      const code2 = await codeFor(app, alice, res.body.client_id, c2, { redirectUri: 'https://app.example.com/cb' });
      const ok = await app.http
        .post('/oauth/token')
        .type('form')
        .set('Authorization', basic(res.body.client_secret))
        .send({
          grant_type: 'authorization_code',
          code: code2,
          code_verifier: v2,
          redirect_uri: 'https://app.example.com/cb',
        })
        .expect(200);
      expect(ok.body.access_token).toMatch(/^ato_/);
    });
  });

  describe('the authorization endpoint', () => {
    const authorize = (params: Record<string, string>) =>
      app.http.get(`/oauth/authorize?${new URLSearchParams(params)}`).redirects(0);

    it('an unknown client or an unregistered redirect URI is an error page, never a redirect', async () => {
      const clientId = await registerPublicClient(app);
      const { challenge } = pkcePair();
      const base = { response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256' };
      for (const params of [
        { ...base, client_id: 'atc_unknownunknownunknown', redirect_uri: REDIRECT_URI },
        { ...base, client_id: clientId, redirect_uri: 'https://evil.example.com/cb' },
        { ...base, client_id: clientId, redirect_uri: 'http://127.0.0.1:49152/other' },
        { ...base, client_id: 'https://localhost/not-fetchable.json', redirect_uri: REDIRECT_URI },
      ]) {
        const res = await authorize(params).expect(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.headers['content-type']).toMatch(/text\/html/);
        expect(res.text).toContain('Cannot connect this app');
      }
    });

    it('a loopback redirect URI may use another port (RFC 8252); the resource may end in a slash', async () => {
      const clientId = await registerPublicClient(app);
      const { challenge } = pkcePair();
      await authorize({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1:60123/callback',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }).expect(200);
      await authorize({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        resource: `${app.baseUrl}${MCP_PATH}/`,
      }).expect(200);
    });

    it('missing or plain PKCE, a bad scope or a foreign resource are an error page, never a redirect, linking back with the RFC error (RFC 9700 §4.11.2)', async () => {
      // An https redirect URI anyone may register: a redirect there would make Atrium an open redirector.
      const evil = 'https://evil.example.com/landing';
      const clientId = await registerPublicClient(app, [evil]);
      const { challenge } = pkcePair();
      const base = { response_type: 'code', client_id: clientId, redirect_uri: evil, state: 'xyz' };
      for (const [params, error] of [
        [{ ...base }, 'invalid_request'],
        [{ ...base, code_challenge: challenge, code_challenge_method: 'plain' }, 'invalid_request'],
        [{ ...base, code_challenge: challenge }, 'invalid_request'],
        [{ ...base, code_challenge: challenge, code_challenge_method: 'S256', scope: 'admin' }, 'invalid_scope'],
        [
          {
            ...base,
            code_challenge: challenge,
            code_challenge_method: 'S256',
            resource: 'https://other.example.com/mcp',
          },
          'invalid_target',
        ],
        [
          { ...base, response_type: 'token', code_challenge: challenge, code_challenge_method: 'S256' },
          'unsupported_response_type',
        ],
      ] as const) {
        const res = await authorize(params as Record<string, string>).expect(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.headers['content-type']).toMatch(/text\/html/);
        expect(res.text).toContain('Cannot connect this app');
        const href = /<a href="([^"]+)"/.exec(res.text)?.[1]?.replace(/&amp;/g, '&');
        const back = new URL(href ?? 'missing:');
        expect(`${back.origin}${back.pathname}`).toBe(evil);
        expect(back.searchParams.get('error')).toBe(error);
        expect(back.searchParams.get('state')).toBe('xyz');
        expect(back.searchParams.get('iss')).toBe(app.baseUrl);
      }
    });

    it('a registered loopback redirect URI does not match with userinfo or a fragment added (registration refuses both)', async () => {
      const clientId = await registerPublicClient(app);
      const { challenge } = pkcePair();
      for (const redirect of [
        'http://attacker@127.0.0.1:49152/callback',
        'http://user:pw@127.0.0.1:49152/callback',
        'http://127.0.0.1:49152/callback#frag',
        'http://127.0.0.1:50000/callback#',
      ]) {
        const res = await authorize({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: redirect,
          code_challenge: challenge,
          code_challenge_method: 'S256',
        }).expect(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.text).toContain('did not register');
      }
    });

    it("`$'`, `$&` and `$\`` in state or client_name reach the consent page as sent (no replacement patterns)", async () => {
      const name = "Evil $' app $& $` $$";
      const res = await app.http
        .post('/oauth/register')
        .send({ client_name: name, redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' })
        .expect(201);
      const { challenge } = pkcePair();
      const state = "s$'t$&a$`te$$";
      const page = await authorize({
        response_type: 'code',
        client_id: res.body.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state,
      }).expect(200);
      const request = consentRequestOf(page.text);
      expect(request.clientName).toBe(name);
      expect(request.state).toBe(state);
      // The page around the JSON is intact: one request element, and the template's closing tags after it.
      expect(page.text.match(/id="authorization-request"/g)).toHaveLength(1);
      expect(page.text.trimEnd().endsWith('</html>')).toBe(true);
    });

    it('the authorization response carries iss (RFC 9207), on approval and on denial; the metadata says so', async () => {
      const metadata = await app.http.get('/.well-known/oauth-authorization-server').expect(200);
      expect(metadata.body.authorization_response_iss_parameter_supported).toBe(true);
      const clientId = await registerPublicClient(app);
      for (const approve of [true, false]) {
        const { challenge } = pkcePair();
        const url = `${app.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256', state: 'st' })}`;
        const redirect = await consent(app, alice, url, { approve });
        expect(redirect.searchParams.getAll('iss')).toEqual([app.baseUrl]);
        expect(redirect.searchParams.get('state')).toBe('st');
      }
    });

    it('denying answers access_denied; consent may not widen scopes; bad consent input is a 400', async () => {
      const clientId = await registerPublicClient(app);
      const { challenge } = pkcePair();
      const redirect = await consent(
        app,
        alice,
        `${app.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256', state: 's' })}`,
        { approve: false },
      );
      expect(redirect.searchParams.get('error')).toBe('access_denied');
      expect(redirect.searchParams.get('code')).toBeNull();
      const base = {
        clientId,
        redirectUri: REDIRECT_URI,
        codeChallenge: challenge,
        codeChallengeMethod: 'S256',
        scope: 'tasks:read',
        approve: true,
      };
      for (const body of [
        { ...base, scopes: ['tasks:write'] },
        { ...base, codeChallengeMethod: 'plain' },
        { ...base, redirectUri: 'https://evil.example.com/cb' },
        { ...base, clientId: 'atc_nope' },
        { ...base, expiresIn: 'forever' },
        { ...base, approve: 'yes' },
      ]) {
        const res = await app.http.post('/api/oauth/authorize').set(bearer(alice.token)).send(body).expect(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
      }
      // Only a user token may consent.
      const key = await makeApiKey(app, alice, { scopes: ['tasks:read'] });
      await app.http.post('/api/oauth/authorize').set(bearer(key.key)).send(base).expect(401);
      await app.http.post('/api/oauth/authorize').send(base).expect(401);
    });
  });

  describe('the token endpoint refuses bad input with RFC 6749 errors', () => {
    let clientId: string;
    beforeAll(async () => {
      clientId = await registerPublicClient(app);
    });

    it('wrong verifier, then the same code again (burned), reused code revokes its grant', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, alice, clientId, challenge);
      const wrong = await tokenRequest(app, {
        grant_type: 'authorization_code',
        code,
        code_verifier: pkcePair().verifier,
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
      }).expect(400);
      expect(wrong.body).toMatchObject({ error: 'invalid_grant' });
      expect(wrong.headers['cache-control']).toBe('no-store');
      await tokenRequest(app, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
      }).expect(400);

      const pair = pkcePair();
      const code2 = await codeFor(app, alice, clientId, pair.challenge);
      const tokens = await exchange(app, clientId, code2, pair.verifier);
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(200);
      const again = await tokenRequest(app, {
        grant_type: 'authorization_code',
        code: code2,
        code_verifier: pair.verifier,
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
      }).expect(400);
      expect(again.body.error).toBe('invalid_grant');
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(401);
    });

    it('redirect URI, client and resource must match the code', async () => {
      const other = await registerPublicClient(app);
      for (const form of [
        (code: string, verifier: string) => ({
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          client_id: clientId,
          redirect_uri: 'http://127.0.0.1:49152/elsewhere',
        }),
        (code: string, verifier: string) => ({
          grant_type: 'authorization_code',
          code,
          code_verifier: verifier,
          client_id: other,
          redirect_uri: REDIRECT_URI,
        }),
      ]) {
        const { verifier, challenge } = pkcePair();
        const code = await codeFor(app, alice, clientId, challenge);
        const res = await tokenRequest(app, form(code, verifier)).expect(400);
        expect(res.body.error).toBe('invalid_grant');
      }
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, alice, clientId, challenge);
      const target = await tokenRequest(app, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        resource: 'https://elsewhere.example.com/mcp',
      }).expect(400);
      expect(target.body.error).toBe('invalid_target');
    });

    it('an expired code is invalid_grant', async () => {
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, alice, clientId, challenge);
      const { Client: PgClient } = await import('pg');
      const db = new PgClient({ connectionString: app.database.url });
      await db.connect();
      // The code's 60 s have passed (moved back in time rather than waited for).
      await db.query(`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`);
      await db.end();
      const res = await tokenRequest(app, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
      }).expect(400);
      expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
    });

    it.each([
      [{}, 400, 'invalid_request'],
      [{ grant_type: 'password', username: 'a', password: 'b' }, 400, 'unsupported_grant_type'],
      [{ grant_type: 'authorization_code', code_verifier: 'x'.repeat(43) }, 400, 'invalid_request'],
      [{ grant_type: 'authorization_code', code: 'atac_junk', code_verifier: 'x'.repeat(43) }, 400, 'invalid_grant'],
      [{ grant_type: 'refresh_token', refresh_token: 'atf_junk' }, 400, 'invalid_grant'],
    ])('%j → %i %s', async (form, status, error) => {
      const res = await tokenRequest(app, { client_id: clientId, ...(form as Record<string, string>) }).expect(status);
      expect(res.body.error).toBe(error);
    });

    it('an unknown client is invalid_client 401; a JSON body is invalid_request', async () => {
      const res = await tokenRequest(app, {
        grant_type: 'authorization_code',
        code: 'x',
        code_verifier: 'y',
        client_id: 'atc_nobody',
      }).expect(401);
      expect(res.body.error).toBe('invalid_client');
      const json = await app.http
        .post('/oauth/token')
        .send({ grant_type: 'authorization_code', client_id: clientId })
        .expect(400);
      expect(json.body.error).toBe('invalid_request');
      const repeated = await app.http
        .post('/oauth/token')
        .type('form')
        .send(`grant_type=refresh_token&grant_type=authorization_code&client_id=${clientId}`)
        .expect(400);
      expect(repeated.body.error).toBe('invalid_request');
    });
  });

  describe('client ID metadata documents', () => {
    const authorizeWith = (clientId: string) => {
      const { challenge } = pkcePair();
      return app.http
        .get(
          `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256' })}`,
        )
        .redirects(0);
    };

    it('a valid document names the client; the whole flow works with the URL as client_id', async () => {
      const clientId = `${metadataBase}/good.json`;
      documents.set('/good.json', (res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            client_id: clientId,
            client_name: 'Doc Client',
            redirect_uris: [REDIRECT_URI],
            token_endpoint_auth_method: 'none',
          }),
        ),
      );
      const page = await authorizeWith(clientId).expect(200);
      expect(page.text).toContain('Doc Client');
      const { verifier, challenge } = pkcePair();
      const code = await codeFor(app, alice, clientId, challenge);
      const tokens = await exchange(app, clientId, code, verifier);
      await app.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(200);
    });

    it('a document that is too large, too slow, not matching its URL or not JSON is an error page', async () => {
      documents.set('/large.json', (res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            client_id: `${metadataBase}/large.json`,
            redirect_uris: [REDIRECT_URI],
            pad: 'x'.repeat(200_000),
          }),
        ),
      );
      documents.set('/slow.json', (res) => {
        const timer = setTimeout(() => res.writeHead(200).end('{}'), 20_000);
        res.on('close', () => clearTimeout(timer));
      });
      documents.set('/other.json', (res) =>
        res
          .writeHead(200)
          .end(JSON.stringify({ client_id: 'https://someone-else.example.com/c.json', redirect_uris: [REDIRECT_URI] })),
      );
      documents.set('/html.json', (res) => res.writeHead(200).end('<html></html>'));
      for (const [path, reason] of [
        ['/large.json', 'too large'],
        ['/slow.json', 'took too long'],
        ['/other.json', 'not valid'],
        ['/html.json', 'not JSON'],
        ['/missing.json', 'HTTP 404'],
      ]) {
        const res = await authorizeWith(`${metadataBase}${path}`).expect(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.text).toContain(reason);
      }
    }, 30_000);
  });

  it('secrets never appear in the grant list, and answers carrying them are no-store', async () => {
    const clientId = await registerPublicClient(app);
    const { verifier, challenge } = pkcePair();
    const code = await codeFor(app, alice, clientId, challenge);
    const res = await tokenRequest(app, {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
    }).expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'tasks:read tasks:write docs:read docs:write github:read github:write',
    });
    const list = await app.http.get('/api/oauth/grants').set(bearer(alice.token)).expect(200);
    const text = JSON.stringify(list.body);
    for (const secret of [code, res.body.access_token, res.body.refresh_token]) expect(text).not.toContain(secret);
  });
});

describeOnSharedServices('OAuth across two instances of one deployment (real PostgreSQL only)', () => {
  let first: TestApp;
  let second: TestApp;
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { ...deploymentEnv('oauth'), PUBLIC_URL: 'http://localhost:3999' };
    first = await startTestApp({ database, env });
    second = await startTestApp({ database, env });
  }, 180_000);
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
  });

  it('a token issued by one instance works on the other; a disconnect on one stops it on the other at once; counts add up', async () => {
    const user = await makeUser(first);
    const tokens = await oauthTokens(first, user, ['tasks:read']);
    await first.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(200);
    await second.http.get(`${MCP_PATH}/tools`).set(bearer(tokens.access_token)).expect(200);
    // A refresh on the second instance rotates what the first issued; reuse on the first is detected.
    const rotated = await tokenRequest(second, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: tokens.clientId,
    }).expect(200);
    await tokenRequest(first, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: tokens.clientId,
    }).expect(400);
    await second.http.get(`${MCP_PATH}/tools`).set(bearer(rotated.body.access_token)).expect(401);

    const again = await oauthTokens(first, user, ['tasks:read']);
    await Promise.all(
      [first, second].flatMap((instance) =>
        Array.from({ length: 20 }, () =>
          instance.http.get(`${MCP_PATH}/tools`).set(bearer(again.access_token)).expect(200),
        ),
      ),
    );
    const grants = (await second.http.get('/api/oauth/grants').set(bearer(user.token)).expect(200)).body.data.items as {
      id: string;
      clientId: string;
      callCount: number;
    }[];
    const grant = grants.find((g) => g.clientId === again.clientId)!;
    expect(grant.callCount).toBe(40);
    await first.http.delete(`/api/oauth/grants/${grant.id}`).set(bearer(user.token)).expect(200);
    const refused = await second.http.get(`${MCP_PATH}/tools`).set(bearer(again.access_token)).expect(401);
    expect(refused.body.error.code).toBe('revoked_api_key');
  });
});
