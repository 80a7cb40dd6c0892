import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startBuiltServer, type BuiltServer } from './support/app-process.js';
import { OpenApiResponseValidator } from './support/openapi-validator.js';
import { pollUntil } from './support/wait.js';

const run = promisify(execFile);
const INSPECTOR_DIR = join(__dirname, '..', 'node_modules', '@modelcontextprotocol', 'inspector');
const INSPECTOR_BIN = join(
  INSPECTOR_DIR,
  (JSON.parse(readFileSync(join(INSPECTOR_DIR, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin[
    'mcp-inspector'
  ],
);
const ROOT = join(__dirname, '..');

/** `redocly lint` (recommended rules) of one file, through @redocly/openapi-core, the CLI's own engine. */
const LINT_SCRIPT = `
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { readFileSync } from 'node:fs';
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({ source: readFileSync(process.argv[1], 'utf8'), absoluteRef: process.argv[1], config });
console.log(JSON.stringify(problems.map((p) => ({ severity: p.severity, rule: p.ruleId, message: p.message, at: p.location?.[0]?.pointer }))));
`;

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function http(
  baseUrl: string,
  method: string,
  path: string,
  options: { token?: string; json?: unknown; form?: FormData } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.json !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body: options.form ?? (options.json === undefined ? undefined : JSON.stringify(options.json)),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the page and its assets
  }
  return { status: res.status, headers: res.headers, body };
}

interface McpConnection {
  from: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * The README's "MCP clients" snippets, with its placeholders (localhost:3000, atrium.example.com) replaced by
 * this server, and the key put where each client takes it from (VS Code's password prompt `${input:…}`,
 * Cursor's `${env:…}`, Claude Code's `${…}`, the shell's `$…`): each becomes the url + headers that client
 * would connect with. No snippet may hold a key itself.
 */
function readmeMcpConnections(base: string, key: string): McpConnection[] {
  const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## MCP clients'),
    readme.indexOf('With curl:', readme.indexOf('## MCP clients')),
  );
  const fill = (text: string) =>
    text
      .replaceAll('http://localhost:3000', base)
      .replaceAll('https://atrium.example.com', base)
      .replaceAll('${input:atrium-api-key}', key)
      .replaceAll('${env:ATRIUM_API_KEY}', key)
      .replaceAll('${ATRIUM_API_KEY}', key)
      .replaceAll('$ATRIUM_API_KEY', key);
  const connections: McpConnection[] = [];
  for (const [, lang, body] of section.matchAll(/```(\w+)\n([\s\S]*?)```/g)) {
    expect(body).not.toMatch(/atr_/);
    const text = fill(body);
    if (lang === 'json') {
      const config = JSON.parse(text) as {
        inputs?: Record<string, unknown>[];
        servers?: Record<string, any>;
        mcpServers?: Record<string, any>;
      };
      // VS Code's prompt for the key is a password field, kept in its secret storage.
      if (config.servers)
        expect(config.inputs).toEqual([
          expect.objectContaining({ type: 'promptString', id: 'atrium-api-key', password: true }),
        ]);
      const entry = (config.servers ?? config.mcpServers)!.atrium;
      // VS Code and Claude Code name the transport; Cursor infers it from `url`.
      if (config.servers || entry.type !== undefined) expect(entry.type).toBe('http');
      connections.push({
        from: config.servers ? 'VS Code' : entry.type ? 'Claude Code .mcp.json' : 'Cursor',
        url: entry.url,
        headers: entry.headers,
      });
      continue;
    }
    // Single-quoted in the README, so the shell hands Claude Code the variable's name, not the key.
    expect(body).not.toMatch(/--header "/);
    const claude = /claude mcp add --transport http atrium (\S+) --header '([^:]+): ([^']+)'/.exec(text);
    if (claude) connections.push({ from: 'claude mcp add', url: claude[1], headers: { [claude[2]]: claude[3] } });
    const openai = /-d @- <<EOF\n([\s\S]*)\nEOF/.exec(text);
    if (openai) {
      const tool = (
        JSON.parse(openai[1]) as { tools: { type: string; server_url: string; headers: Record<string, string> }[] }
      ).tools[0];
      expect(tool.type).toBe('mcp');
      connections.push({ from: 'OpenAI Responses mcp tool', url: tool.server_url, headers: tool.headers });
    }
  }
  return connections;
}

/**
 * The shipped artifact, driven from outside: `nest build` as `npm start` runs it, then `node dist/src/main.js`
 * with only environment variables, on the zero-config embedded default and (with TEST_DATABASE_URL) on
 * PostgreSQL + Redis. Everything goes over HTTP, as a user's browser, MCP client or script would.
 */
const variants: { name: string; enabled: boolean }[] = [
  { name: 'embedded default (no DATABASE_URL, no REDIS_URL)', enabled: true },
  { name: 'PostgreSQL + Redis', enabled: !!process.env.TEST_DATABASE_URL },
];

describe.each(variants.filter((v) => v.enabled))('built server: $name', ({ name }) => {
  // The generated-client check needs one server, not one per variant.
  const onFirstVariant = name === variants[0].name ? it : it.skip;
  const home = mkdtempSync(join(tmpdir(), 'atrium-built-home-'));
  let server: BuiltServer;
  let base = '';
  let token = '';
  let key = '';

  beforeAll(async () => {
    server = await startBuiltServer(name.startsWith('embedded') ? 'embedded' : 'services');
    base = server.baseUrl;
    const email = `built-${Date.now()}@example.com`;
    expect(
      (await http(base, 'POST', '/api/auth/register', { json: { email, password: 'built-password-1', name: 'Built' } }))
        .status,
    ).toBe(201);
    token = (await http(base, 'POST', '/api/auth/login', { json: { email, password: 'built-password-1' } })).body.data
      .accessToken;
    const created = await http(base, 'POST', '/api/api-keys', {
      token,
      json: { name: 'built', scopes: ['tasks:read', 'tasks:write', 'docs:read'], expiresIn: 'never' },
    });
    expect(created.status).toBe(201);
    key = created.body.data.key;
  }, 240_000);

  afterAll(async () => {
    rmSync(home, { recursive: true, force: true });
    if (server) expect(await server.stop()).toBe(0);
  }, 60_000);

  it('serves the account page and its assets from dist/public', async () => {
    const page = await http(base, 'GET', '/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.body).toContain('src="/app.js"');
    const script = await http(base, 'GET', '/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    const styles = await http(base, 'GET', '/styles.css');
    expect(styles.status).toBe(200);
    expect(styles.headers.get('content-type')).toMatch(/^text\/css/);
    const snippets = await http(base, 'GET', '/mcp-snippets.js'); // imported by app.js
    expect(snippets.status).toBe(200);
    expect(snippets.body).toContain('export function mcpClientSnippets');
    expect((await http(base, 'GET', '/nothing-here.css')).status).toBe(404);
  });

  it('serves the OpenAPI document and the docs page', async () => {
    const openapi = await http(base, 'GET', '/api/docs/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.body.paths)).toEqual(
      expect.arrayContaining(['/api/health', '/api/v1/public/mcp', '/api/documents/upload']),
    );
    const docs = await http(base, 'GET', '/api/docs');
    expect(docs.status).toBe(200);
    expect(docs.body).toContain('swagger');
  });

  onFirstVariant(
    'serves an OpenAPI document that lints clean and generates a typed client that works',
    async () => {
      // Inside the repository (so `openapi-fetch` resolves from its node_modules) but not under node_modules,
      // where Node does not strip types; test-output/ is git-ignored.
      const dir = join(ROOT, 'test-output', `openapi-client-${process.pid}`);
      mkdirSync(dir, { recursive: true });
      try {
        const document = (await http(base, 'GET', '/api/docs/openapi.json')).body;
        expect(document.openapi).toBe('3.1.0');
        writeFileSync(join(dir, 'openapi.json'), JSON.stringify(document));
        copyFileSync(join(__dirname, 'fixtures', 'openapi-client.mts'), join(dir, 'openapi-client.mts'));
        const node = (args: string[]) =>
          run(process.execPath, args, { cwd: ROOT, timeout: 90_000, maxBuffer: 20 * 1024 * 1024 });
        // The README's two commands: generate the types (openapi-typescript), then a client (openapi-fetch) uses them.
        const [lint] = await Promise.all([
          node(['--input-type=module', '-e', LINT_SCRIPT, join(dir, 'openapi.json')]),
          node([
            join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
            join(dir, 'openapi.json'),
            '--default-non-nullable',
            'false',
            '-o',
            join(dir, 'schema.mts'),
          ]),
        ]);
        const problems = JSON.parse(lint.stdout) as { severity: string; rule: string; message: string; at: string }[];
        expect(problems.filter((problem) => problem.severity === 'error')).toEqual([]);

        // Compile-time: every read of an answer in the client is checked against the generated types.
        const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
        const compiled = await node([
          tsc,
          '--ignoreConfig',
          '--noEmit',
          '--strict',
          '--target',
          'es2023',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--skipLibCheck',
          '--types',
          'node',
          join(dir, 'openapi-client.mts'),
        ]).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }));
        expect(compiled.stdout).toBe('');

        // Run time: the client calls the server; each answer must match the document for its route and status.
        const { stdout } = await node([join(dir, 'openapi-client.mts'), base, token, key]);
        const { answers, read } = JSON.parse(stdout) as {
          answers: { route: string; method: string; status: number; contentType: string | null; body: unknown }[];
          read: Record<string, any>;
        };
        const validator = new OpenApiResponseValidator(document);
        const mismatches = answers
          .map((a) =>
            validator.check(
              a.method,
              a.route,
              a.status,
              a.contentType ?? undefined,
              Buffer.from(JSON.stringify(a.body)),
              undefined,
            ),
          )
          .filter(Boolean);
        expect(mismatches).toEqual([]);
        expect(answers.map((a) => `${a.method} ${a.status}`)).toEqual([
          'GET 200',
          'GET 200',
          'POST 201',
          'GET 200',
          'GET 404',
          'GET 200',
          'GET 200',
          'POST 200',
          'GET 401',
        ]);
        expect(read).toMatchObject({
          status: 'ok',
          role: 'admin',
          memberCount: 1,
          missingCode: 'NOT_FOUND',
          unauthorisedStatus: 401,
        });
        expect(read.toolNames).toEqual(expect.arrayContaining(['list_tasks', 'create_task', 'search_documents']));
        expect(read.callResult).toMatchObject({ title: 'typed by the generated client', priority: 'high' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );

  it('answers the MCP Inspector CLI on /api/v1/public/mcp with the key', async () => {
    const inspector = (args: string[]) =>
      run(
        process.execPath,
        [
          INSPECTOR_BIN,
          '--cli',
          `${base}/api/v1/public/mcp`,
          '--transport',
          'http',
          '--header',
          `Authorization: Bearer ${key}`,
          '--stored-auth-only',
          '--format',
          'json',
          ...args,
        ],
        {
          env: { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1' },
          timeout: 90_000,
          maxBuffer: 10 * 1024 * 1024,
        },
      );
    const listed = JSON.parse((await inspector(['--method', 'tools/list'])).stdout) as {
      result: { tools: { name: string }[] };
    };
    expect(listed.result.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['list_tasks', 'create_task', 'search_documents']),
    );
    const called = JSON.parse(
      (
        await inspector([
          '--method',
          'tools/call',
          '--tool-name',
          'create_task',
          '--tool-args-json',
          JSON.stringify({ title: 'from the built server' }),
        ])
      ).stdout,
    ) as { result: { structuredContent: { title: string }; isError?: boolean } };
    expect(called.result.isError).toBeFalsy();
    expect(called.result.structuredContent.title).toBe('from the built server');
  }, 120_000);

  it('connects with every MCP client snippet of the README (url and headers as each client sends them)', async () => {
    const connections = readmeMcpConnections(base, key);
    expect(connections.map((c) => c.from)).toEqual([
      'VS Code',
      'claude mcp add',
      'Claude Code .mcp.json',
      'Cursor',
      'OpenAI Responses mcp tool',
    ]);
    for (const connection of connections) {
      expect(connection.url).toBe(`${base}/api/v1/public/mcp`);
      const client = new McpClient({ name: connection.from, version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(connection.url), { requestInit: { headers: connection.headers } }),
      );
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toContain('list_tasks');
      } finally {
        await client.close();
      }
    }
  }, 60_000);

  it('answers health (ok), readiness and /api/auth/me for the signed-in user', async () => {
    const health = await http(base, 'GET', '/api/health');
    expect(health.status).toBe(200);
    expect(health.body.data.status).toBe('ok');
    expect((await http(base, 'GET', '/api/ready')).status).toBe(200);
    const me = await http(base, 'GET', '/api/auth/me', { token });
    expect(me.status).toBe(200);
    expect(me.body.data.email).toMatch(/^built-\d+@example\.com$/);
  });

  it('tells the account page whether sign-up is open', async () => {
    expect((await http(base, 'GET', '/api/auth/signup')).body.data).toEqual({ open: true });
  });

  it('answers an upload declared far over UPLOAD_MAX_BYTES with a 413 its client reads while still sending', async () => {
    // In another process than the client, the refusal before the body is read closes the connection: without a
    // lingering close, fetch reported EPIPE instead of the answer.
    const project = await http(base, 'POST', '/api/projects', { token, json: { name: 'Too large' } });
    for (let i = 0; i < 3; i += 1) {
      const form = new FormData();
      form.append('projectId', project.body.data.id);
      form.append('file', new Blob([Buffer.alloc(24 * 1024 * 1024, 'a')], { type: 'text/plain' }), 'huge.txt');
      const answer = await fetch(`${base}/api/documents/upload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: form,
      });
      expect(answer.status).toBe(413);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
    }
  }, 60_000);

  it('indexes an uploaded document in the background and finds it by search', async () => {
    const project = await http(base, 'POST', '/api/projects', { token, json: { name: 'Built project' } });
    expect(project.status).toBe(201);
    const form = new FormData();
    form.append(
      'file',
      new Blob(['The built server test checks that the lighthouse keeper logs every passing ship.\n'], {
        type: 'text/plain',
      }),
      'note.txt',
    );
    form.append('projectId', project.body.data.id);
    const uploaded = await http(base, 'POST', '/api/documents/upload', { token, form });
    expect(uploaded.status).toBe(201);
    const documentId = uploaded.body.data.id as string;
    // Polled, not timed: on a busy machine indexing takes what it takes; the bound only stops a hang.
    const status = await pollUntil(
      'the upload indexed',
      async () => (await http(base, 'GET', `/api/documents/${documentId}`, { token })).body.data.status,
      (state) => state === 'indexed' || state === 'failed',
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    expect(status).toBe('indexed');
    const search = await http(base, 'POST', '/api/rag/search', {
      token,
      json: { query: 'lighthouse keeper', projectId: project.body.data.id },
    });
    expect(search.status).toBe(200);
    expect(search.body.data.results[0]).toMatchObject({ documentId });
  }, 180_000);
});
