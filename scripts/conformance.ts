/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in package.json) against the
 * built server, the way a deployment serves it:
 *
 * 1. starts `node dist/src/main.js` with `MCP_CONFORMANCE_FIXTURES=true` on a fresh DATA_DIR (the embedded engine,
 *    or the database named by `CONFORMANCE_DATABASE_URL`), on a loopback port;
 * 2. registers a user and creates an API key with every scope;
 * 3. puts a small front door on loopback before it that adds `Authorization: Bearer <key>` (the suite sends none),
 *    so every scenario goes through the real transport, authentication, rate limit and pipeline;
 * 4. runs the server scenarios of each requirement set (`--requirements 2025-11-25`, then `2026-07-28`), and the
 *    suite's authorization-server scenarios against Atrium's own authorization server;
 * 5. prints each scenario and "N passed, M failed", and exits 1 when anything required failed.
 *
 * Usage: npm run conformance [-- --only <scenario>[,<scenario>…]] [-- --keep]  (Node 24 runs TypeScript by stripping types)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync, createWriteStream } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(dirname(process.argv[1]), '..');
const MCP_PATH = '/api/v1/public/mcp';
const REQUIREMENT_SETS = ['2025-11-25', '2026-07-28'] as const;
const SCOPES = ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'];
const CONFORMANCE_DIR = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance');

interface Options {
  only?: Set<string>;
  keep: boolean;
}

interface ScenarioResult {
  set: string;
  scenario: string;
  scored: boolean;
  passed: boolean;
  failures: string[];
}

function parseArgs(argv: string[]): Options {
  const options: Options = { keep: false };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--only')
      options.only = new Set(
        argv[++i]
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
    else if (argv[i] === '--keep') options.keep = true;
    else throw new Error(`unknown argument ${argv[i]} (use --only <scenario,…> or --keep)`);
  }
  return options;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createNetServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}

async function waitForHealth(base: string, server: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`the server exited with code ${server.exitCode} before it was ready`);
    try {
      const answer = await fetch(`${base}/api/ready`);
      if (answer.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 250));
  }
  throw new Error(`the server was not ready within ${timeoutMs / 1000} s`);
}

async function json(
  base: string,
  method: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<Record<string, any>> {
  const answer = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`${method} ${path} answered ${answer.status}: ${text}`);
  return JSON.parse(text) as Record<string, any>;
}

/** The front door: forwards everything to the server, adding the key to MCP requests that carry no credential. */
function startFrontDoor(target: URL, key: string, port: number): Promise<Server> {
  const door = createServer((req, res) => {
    const headers = { ...req.headers };
    // Only the MCP endpoint: the OAuth endpoints behind the same door must see exactly what the client sent.
    if (headers.authorization === undefined && (req.url ?? '').startsWith(MCP_PATH))
      headers.authorization = `Bearer ${key}`;
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  return new Promise((done) => door.listen(port, '127.0.0.1', () => done(door)));
}

function runSuite(args: string[]): Promise<{ code: number; output: string }> {
  const bin = join(
    CONFORMANCE_DIR,
    (JSON.parse(readFileSync(join(CONFORMANCE_DIR, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
      .conformance,
  );
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => done({ code: code ?? 1, output }));
  });
}

/** The scenario names a requirement set scores and the ones it runs without scoring, as the suite lists them. */
async function requirementSet(revision: string): Promise<{ scored: string[]; notScored: string[] }> {
  const { output } = await runSuite(['list', '--requirements', revision]);
  const scored: string[] = [];
  const notScored: string[] = [];
  let section: 'server' | 'other' | 'not-scored' = 'other';
  for (const line of output.split('\n')) {
    if (/^Server scenarios/.test(line)) section = 'server';
    else if (/^Client scenarios/.test(line)) section = 'other';
    else if (/^Run and reported, but never scored/.test(line)) section = 'not-scored';
    const item = /^\s+- (\S+)(?: \[(\w+)\])?/.exec(line);
    if (!item) continue;
    if (section === 'server') scored.push(item[1]);
    else if (section === 'not-scored' && item[2] === 'server') notScored.push(item[1]);
  }
  return { scored, notScored };
}

/** Reads every checks.json under a results folder: scenario → failed check descriptions. */
function readChecks(outDir: string): Map<string, { failures: string[]; checks: number }> {
  const results = new Map<string, { failures: string[]; checks: number }>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name === 'checks.json') {
        const scenario =
          /(?:server|authorization)-(.+)-\d{4}-\d\d-\d\dT[\d-]+(?:\.\d+Z?)?/.exec(
            dirname(path).split('/').pop() ?? '',
          )?.[1] ?? dirname(path);
        const checks = JSON.parse(readFileSync(path, 'utf8')) as {
          id: string;
          status: string;
          errorMessage?: string;
        }[];
        const failures = checks
          .filter((c) => c.status === 'FAILURE')
          .map((c) => `${c.id}: ${(c.errorMessage ?? '').slice(0, 400)}`);
        results.set(scenario, { failures, checks: checks.length });
      }
    }
  };
  if (existsSync(outDir)) walk(outDir);
  return results;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const work = mkdtempSync(join(tmpdir(), 'atrium-conformance-'));
  const serverPort = await freePort();
  const doorPort = await freePort();
  const base = `http://127.0.0.1:${serverPort}`;
  const doorUrl = `http://127.0.0.1:${doorPort}`;
  const logPath = join(work, 'server.log');
  const log = createWriteStream(logPath);
  const databaseUrl = process.env.CONFORMANCE_DATABASE_URL;
  console.log(
    `conformance: server on ${base} (${databaseUrl ? 'CONFORMANCE_DATABASE_URL' : 'embedded engine'}), front door ${doorUrl}, work dir ${work}`,
  );
  const server = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'development',
      PORT: String(serverPort),
      HOST: '127.0.0.1',
      DATA_DIR: join(work, 'data'),
      // The front door is the address clients use, so its origin is the server's own.
      PUBLIC_URL: doorUrl,
      MCP_CONFORMANCE_FIXTURES: 'true',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_KEY_PER_MIN: '100000',
      SHUTDOWN_DRAIN_DELAY_MS: '0',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...(process.env.CONFORMANCE_REDIS_URL ? { REDIS_URL: process.env.CONFORMANCE_REDIS_URL } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout?.pipe(log);
  server.stderr?.pipe(log);
  let door: Server | undefined;
  const results: ScenarioResult[] = [];
  let authResults: ScenarioResult[] = [];
  try {
    await waitForHealth(base, server, 120_000);
    const email = `conformance-${Date.now()}@example.com`;
    const password = 'conformance-password-1';
    await json(base, 'POST', '/api/auth/register', { email, password, name: 'Conformance' });
    const token = (await json(base, 'POST', '/api/auth/login', { email, password })).data.accessToken as string;
    const key = (
      await json(base, 'POST', '/api/api-keys', { name: 'conformance', scopes: SCOPES, expiresIn: 'never' }, token)
    ).data.key as string;
    door = await startFrontDoor(new URL(base), key, doorPort);

    for (const revision of REQUIREMENT_SETS) {
      const set = await requirementSet(revision);
      const outDir = join(work, `results-${revision}`);
      const args = ['server', '--url', `${doorUrl}${MCP_PATH}`, '-o', outDir];
      const wanted = options.only ? [...set.scored, ...set.notScored].filter((s) => options.only?.has(s)) : undefined;
      if (wanted?.length === 0) continue;
      if (wanted) {
        for (const scenario of wanted)
          await runSuite([...args, '--scenario', scenario, '--spec-version', revision, '--force']);
      } else {
        await runSuite([...args, '--requirements', revision]);
      }
      const checks = readChecks(outDir);
      for (const scenario of wanted ?? [...set.scored, ...set.notScored]) {
        const found = checks.get(scenario);
        results.push({
          set: revision,
          scenario,
          scored: set.scored.includes(scenario),
          passed: found !== undefined && found.failures.length === 0 && found.checks > 0,
          failures: found ? found.failures : ['no result (the scenario did not run or crashed)'],
        });
      }
    }
    if (!options.only || options.only.has('authorization'))
      authResults = await runAuthorizationScenarios(base, doorUrl, token, work);
  } finally {
    door?.closeAllConnections();
    await new Promise((done) => (door ? door.close(done) : done(undefined)));
    server.kill('SIGTERM');
    await new Promise((done) => (server.exitCode !== null ? done(undefined) : server.once('exit', done)));
  }

  let failed = 0;
  for (const revision of REQUIREMENT_SETS) {
    const ofSet = results.filter((r) => r.set === revision);
    if (ofSet.length === 0) continue;
    console.log(`\nRequirement set ${revision} (server scenarios, at the ${revision} wire):`);
    for (const r of ofSet) {
      console.log(
        `  ${r.passed ? '✓' : '✗'} ${r.scenario}${r.scored ? '' : ' (not scored)'}${!r.passed && !r.scored ? `: ${r.failures.length} failed check(s), first: ${r.failures[0]?.slice(0, 160)}` : ''}`,
      );
      if (!r.passed && r.scored) for (const f of r.failures) console.log(`      ${f}`);
    }
    const scored = ofSet.filter((r) => r.scored);
    const passed = scored.filter((r) => r.passed).length;
    failed += scored.length - passed;
    const extra = ofSet.filter((r) => !r.scored);
    console.log(
      `  ${revision}: ${passed} passed, ${scored.length - passed} failed` +
        (extra.length ? ` (not scored: ${extra.filter((r) => r.passed).length} of ${extra.length} pass)` : ''),
    );
  }
  if (authResults.length) {
    console.log('\nAuthorization server scenarios (Atrium as the authorization server):');
    for (const r of authResults) {
      console.log(`  ${r.passed ? '✓' : '✗'} ${r.scenario}`);
      if (!r.passed) for (const f of r.failures) console.log(`      ${f}`);
    }
    const passed = authResults.filter((r) => r.passed).length;
    failed += authResults.length - passed;
    console.log(`  authorization server: ${passed} passed, ${authResults.length - passed} failed`);
  }
  const all = [...results.filter((r) => r.scored), ...authResults];
  const passedAll = all.filter((r) => r.passed).length;
  console.log(`\n${passedAll} passed, ${all.length - passedAll} failed`);
  if (failed > 0) console.log(`server log: ${logPath}`);
  if (failed === 0 && !options.keep) rmSync(work, { recursive: true, force: true });
  process.exitCode = failed === 0 ? 0 : 1;
}

/**
 * The suite's authorization-server scenarios against Atrium's own authorization server (the issuer is PUBLIC_URL):
 * a public client registered for the suite's loopback callback, and this script as the user's browser once the suite
 * prints the authorization URL (the consent page, then the approval the page's script would send).
 */
async function runAuthorizationScenarios(
  base: string,
  issuer: string,
  token: string,
  work: string,
): Promise<ScenarioResult[]> {
  const callbackPort = await freePort();
  const redirectUri = `http://127.0.0.1:${callbackPort}/callback`;
  const client = await json(base, 'POST', '/oauth/register', {
    client_name: 'MCP conformance suite',
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: 'none',
  });
  const outDir = join(work, 'results-authorization');
  const bin = join(
    CONFORMANCE_DIR,
    (JSON.parse(readFileSync(join(CONFORMANCE_DIR, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
      .conformance,
  );
  const child = spawn(
    process.execPath,
    [
      bin,
      'authorization',
      '--url',
      issuer,
      '--client-id',
      client.client_id as string,
      '-p',
      String(callbackPort),
      '-o',
      outDir,
    ],
    {
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  let approved: Promise<void> | undefined;
  const onOutput = (chunk: Buffer): void => {
    output += chunk.toString();
    const url = /^(\S+\/oauth\/authorize\?\S+)$/m.exec(output)?.[1];
    if (url && !approved) approved = approveAsUser(base, token, url);
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  await new Promise((done) => child.on('close', done));
  if (approved) await approved.catch((error: unknown) => (output += `\nthe approval failed: ${String(error)}`));
  const checks = readChecks(outDir);
  const names = ['authorization-server-metadata-endpoint', 'authorization-code-grant'];
  return names.map((scenario) => {
    const found = [...checks.entries()].find(([name]) => name.includes(scenario))?.[1];
    return {
      set: 'authorization',
      scenario,
      scored: true,
      passed: found !== undefined && found.failures.length === 0 && found.checks > 0,
      failures: found ? found.failures : [`no result: ${output.slice(-600)}`],
    };
  });
}

/** What the user does in the browser: open the consent page, approve what it shows, follow the redirect. */
async function approveAsUser(base: string, token: string, authorizationUrl: string): Promise<void> {
  const url = new URL(authorizationUrl);
  const page = await fetch(`${base}${url.pathname}${url.search}`);
  const html = await page.text();
  const embedded = /<script type="application\/json" id="authorization-request">([\s\S]*?)<\/script>/.exec(html)?.[1];
  if (!page.ok || !embedded) throw new Error(`the consent page answered ${page.status}`);
  const request = JSON.parse(embedded) as Record<string, any>;
  const answer = await json(
    base,
    'POST',
    '/api/oauth/authorize',
    {
      clientId: request.clientId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      scope: (request.scopes as string[]).join(' '),
      resource: request.resource,
      ...(request.state !== null ? { state: request.state } : {}),
      approve: true,
    },
    token,
  );
  await fetch(answer.data.redirectTo as string);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.stack : error);
  process.exitCode = 1;
});
