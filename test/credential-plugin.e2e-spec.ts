import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from '../src/database/data-source-options.js';
import { DatabasePool } from '../src/database/database-pool.js';
import { CredentialRegistry } from '../src/modules/credentials/credential-registry.js';
import { FixtureCredentialModule } from './fixtures/fixture-credential/fixture-credential.module.js';
import { FixtureTokenCredential } from './fixtures/fixture-credential/fixture-token.credential.js';
import { FixtureTokens1795900000000 } from './fixtures/fixture-credential/fixture-tokens.migration.js';
import { bearer, callTool, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/**
 * A new credential kind is one folder plus a migration (docs/adding-a-credential.md): the fixture kind in
 * test/fixtures/fixture-credential/ plugs into the CredentialRegistry and, with no edit anywhere else, calls tools on
 * both doors, spends its own budget, is refused on the backend routes with its own message, and is named in the audit
 * log as itself.
 */
describe('a credential kind added as a plug-in (e2e)', () => {
  let app: TestApp;
  let admin: TestUser;
  let alice: TestUser;
  let fixture: FixtureTokenCredential;

  beforeAll(async () => {
    app = await startTestApp({ extraModules: [FixtureCredentialModule] });
    // Through TypeORM's migration runner, as a real kind's migration in migrations/ would run.
    const migrations = await new DataSource(buildDataSourceOptions(app.app.get(DatabasePool).url, 1)).initialize();
    const runner = migrations.createQueryRunner();
    try {
      await new FixtureTokens1795900000000().up(runner);
    } finally {
      await runner.release();
      await migrations.destroy();
    }
    fixture = app.app.get(FixtureTokenCredential);
    admin = await makeUser(app);
    alice = await makeUser(app);
  });

  afterAll(async () => {
    await app?.close();
  });

  /** Every audit entry, through the admin's NDJSON export. */
  async function auditEntries(): Promise<any[]> {
    const res = await app.http
      .get('/api/admin/audit/export')
      .set(bearer(admin.token))
      .buffer(true)
      .parse((response, done) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        response.on('end', () => done(null, text));
      });
    expect(res.status).toBe(200);
    return (res.body as string)
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  }

  it('is registered beside the real kinds', () => {
    const names = app.app
      .get(CredentialRegistry)
      .list()
      .map((kind) => kind.name);
    expect(names).toEqual(
      expect.arrayContaining(['user-token', 'project-token', 'api-key', 'oauth-grant', 'agent-run', 'fixture-token']),
    );
  });

  it('calls tools on the JSON door and on MCP, attributed to itself in the audit log', async () => {
    const { id, token } = await fixture.issue(alice.id, ['tasks:read', 'tasks:write']);

    const created = await callTool(app, token, 'create_task', { title: 'made with a fixture token' }).expect(200);
    const taskId = created.body.result.id as string;
    expect(created.body.result).toMatchObject({ title: 'made with a fixture token' });

    const client = new Client({ name: 'fixture-e2e-client', version: '2.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.baseUrl}/api/v1/public/mcp`), {
        requestInit: { headers: bearer(token) },
      }),
    );
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('create_task');
      const listed = await client.callTool({ name: 'list_tasks', arguments: {} });
      expect(listed.isError).toBeFalsy();
      expect(JSON.stringify(listed.structuredContent ?? listed.content)).toContain(taskId);
    } finally {
      await client.close();
    }

    const mine = (await auditEntries()).filter((entry) => entry.actor.credentialId === id);
    const create = mine.find((entry) => entry.details.tool === 'create_task');
    expect(create).toMatchObject({
      action: 'tool.call',
      actor: { userId: alice.id, via: 'fixture_token', credentialId: id },
      target: { type: 'task', id: taskId },
      outcome: { status: 'ok' },
    });
    const list = mine.find((entry) => entry.details.tool === 'list_tasks');
    expect(list).toMatchObject({
      action: 'tool.call',
      actor: { userId: alice.id, via: 'fixture_token', credentialId: id },
      outcome: { status: 'ok' },
    });
  });

  it('is refused where it does not work, with its own messages, and once revoked', async () => {
    const { id, token } = await fixture.issue(alice.id, ['tasks:read']);
    const backend = await app.http.get('/api/projects').set(bearer(token)).expect(401);
    expect(backend.body.error.message).toBe(
      'Fixture tokens (atx_…) work only on the tool API under /api/v1/public/mcp',
    );

    const missing = await app.http.post('/api/v1/public/mcp/call').send({ name: 'list_tasks' }).expect(401);
    expect(missing.body.error.message).toContain('or a fixture token (atx_…, a test fixture)');
    const projectToken = await callTool(app, 'atp_not-a-real-one', 'list_tasks').expect(401);
    expect(projectToken.body.error.message).toContain('or a fixture token (atx_…), got a project session token');

    expect((await callTool(app, token, 'create_task', { title: 'no write scope' }).expect(403)).body.error.code).toBe(
      'insufficient_scope',
    );
    await fixture.revoke(id);
    const revoked = await callTool(app, token, 'list_tasks').expect(401);
    expect(revoked.body.error).toMatchObject({ code: 'invalid_api_key', message: 'The fixture token is not valid' });
    expect(revoked.headers['www-authenticate']).toContain('error="invalid_token"');
  });
});
