import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const run = promisify(execFile);
const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };

/** The inspector's own bin script, run with this Node (>= 22.19 is required; ours is 24). */
const INSPECTOR_DIR = join(__dirname, '..', 'node_modules', '@modelcontextprotocol', 'inspector');
const INSPECTOR_BIN = join(
  INSPECTOR_DIR,
  (JSON.parse(readFileSync(join(INSPECTOR_DIR, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin[
    'mcp-inspector'
  ],
);

describe('MCP endpoint with the MCP Inspector CLI', () => {
  let app: TestApp;
  let user: TestUser;
  let key: string;
  let home: string;

  /** Runs `mcp-inspector --cli <url> …` with a throwaway HOME so it never touches the real one. */
  const inspector = (args: string[]) =>
    run(process.execPath, [INSPECTOR_BIN, '--cli', `${app.baseUrl}/api/v1/public/mcp`, ...args], {
      env: { ...process.env, HOME: home, NO_COLOR: '1' },
      timeout: 90_000,
      maxBuffer: 10 * 1024 * 1024,
    });

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'atrium-inspector-'));
    app = await startTestApp({ env: EMBEDDED_SAFE_ENV });
    user = await makeUser(app);
    key = (
      await app.http
        .post('/api/api-keys')
        .set(bearer(user.token))
        .send({ name: 'inspector', scopes: ['tasks:read', 'tasks:write'], expiresIn: 'never' })
        .expect(201)
    ).body.data.key;
  }, 180_000);
  afterAll(async () => {
    await app.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('tools/list over --transport http lists the tools of the key, like the JSON door', async () => {
    const { stdout } = await inspector([
      '--transport',
      'http',
      '--method',
      'tools/list',
      '--header',
      `Authorization: Bearer ${key}`,
      '--stored-auth-only',
      '--format',
      'json',
    ]);
    const listed = (JSON.parse(stdout) as { result: unknown }).result as {
      tools: { name: string; inputSchema: unknown; outputSchema: unknown; annotations: unknown }[];
    };
    const jsonDoor = await app.http.get('/api/v1/public/mcp/tools').set(bearer(key)).expect(200);
    expect(listed.tools.map((t) => t.name)).toEqual(jsonDoor.body.tools.map((t: { name: string }) => t.name));
    expect(listed.tools[0]).toMatchObject({
      name: 'list_tasks',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      annotations: { readOnlyHint: true },
    });
  }, 120_000);

  it('--strict finds no portability problem at all in the tool schemas (no errors, no warnings)', async () => {
    const { stderr } = await inspector([
      '--transport',
      'http',
      '--method',
      'tools/list',
      '--strict',
      '--header',
      `Authorization: Bearer ${key}`,
      '--stored-auth-only',
      '--format',
      'json',
    ]);
    expect([...stderr.matchAll(/Path: (\S+)/g)].map((m) => m[1])).toEqual([]);
    expect(stderr).not.toMatch(/warning/i);
  }, 120_000);

  it("the README's Inspector command, as written, with a wrong key reads as a key error (no OAuth login, no TTY message)", async () => {
    const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
    const command = /\| MCP Inspector \| `npx @modelcontextprotocol\/inspector --cli <url> ([^`]+)`/.exec(readme)?.[1];
    expect(command).toBeDefined();
    // The command's arguments, the header filled in with a wrong key.
    const args = [...(command as string).matchAll(/"([^"]*)"|(\S+)/g)]
      .map((m) => m[1] ?? m[2])
      .map((arg) => arg.replace(/Bearer \S+/, 'Bearer atr_wrongwrongwrongwrongwrongwrongwr000000'));
    const failure = await inspector([...args, '--method', 'tools/list']).then(
      () => ({ stderr: 'succeeded', stdout: '' }),
      (error: { stderr: string; stdout: string }) => error,
    );
    const output = `${failure.stderr}\n${failure.stdout}`;
    expect(output).toContain('invalid_api_key');
    expect(output).not.toMatch(/TTY|Interactive OAuth/);
  }, 120_000);

  it('tools/call create_task returns structured content', async () => {
    const { stdout } = await inspector([
      '--transport',
      'http',
      '--method',
      'tools/call',
      '--tool-name',
      'create_task',
      '--tool-args-json',
      JSON.stringify({ title: 'from the inspector', priority: 'urgent' }),
      '--header',
      `Authorization: Bearer ${key}`,
      '--stored-auth-only',
      '--format',
      'json',
    ]);
    const result = (JSON.parse(stdout) as { result: unknown }).result as {
      structuredContent: Record<string, unknown>;
      isError?: boolean;
    };
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      title: 'from the inspector',
      priority: 'urgent',
      creator_id: user.id,
    });
  }, 120_000);

  it('a wrong key fails with 401 and no interactive login', async () => {
    await expect(
      inspector([
        '--transport',
        'http',
        '--method',
        'tools/list',
        '--header',
        'Authorization: Bearer atr_wrongwrongwrongwrongwrongwrongwr000000',
        '--stored-auth-only',
        '--format',
        'json',
      ]),
    ).rejects.toMatchObject({ stderr: expect.stringContaining('invalid_api_key') });
    const failure = await inspector([
      '--transport',
      'http',
      '--method',
      'tools/list',
      '--header',
      'Authorization: Bearer atr_nope',
      '--stored-auth-only',
      '--format',
      'json',
    ]).catch((error: { stderr: string }) => JSON.parse(error.stderr) as { error: { code: string } });
    expect(failure).toMatchObject({ error: { code: 'auth_required' } });
  }, 120_000);

  it('--protocol-era modern speaks revision 2026-07-28 (server/discover) and lists and calls the same tools', async () => {
    const common = [
      '--transport',
      'http',
      '--protocol-era',
      'modern',
      '--header',
      `Authorization: Bearer ${key}`,
      '--stored-auth-only',
      '--format',
      'json',
    ];
    const { stdout } = await inspector([...common, '--method', 'tools/list']);
    const listed = (JSON.parse(stdout) as { result: { tools: { name: string }[] } }).result;
    const jsonDoor = await app.http.get('/api/v1/public/mcp/tools').set(bearer(key)).expect(200);
    expect(listed.tools.map((t) => t.name)).toEqual(jsonDoor.body.tools.map((t: { name: string }) => t.name));
    const called = await inspector([
      ...common,
      '--method',
      'tools/call',
      '--tool-name',
      'create_task',
      '--tool-args-json',
      JSON.stringify({ title: 'modern era' }),
    ]);
    const result = (
      JSON.parse(called.stdout) as { result: { structuredContent: Record<string, unknown>; isError?: boolean } }
    ).result;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ title: 'modern era', creator_id: user.id });
  }, 120_000);

  it('--protocol-era legacy still negotiates a 2025 revision', async () => {
    const { stdout } = await inspector([
      '--transport',
      'http',
      '--protocol-era',
      'legacy',
      '--method',
      'tools/list',
      '--header',
      `Authorization: Bearer ${key}`,
      '--stored-auth-only',
      '--format',
      'json',
    ]);
    expect((JSON.parse(stdout) as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0);
  }, 120_000);
});
