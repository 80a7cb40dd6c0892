import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { buildOnce, startAppProcess } from './support/app-process.js';
import { bearer, callTool, makeApiKey, makeUser } from './support/factories.js';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

/** Rows of the users table, read straight from the database (what an operator or an attacker with a dump sees). */
async function userRows(
  database: TestDatabase,
  email: string,
): Promise<{ id: string; role: string; password_hash: string }[]> {
  const db = new Client({ connectionString: database.url });
  await db.connect();
  try {
    const { rows } = await db.query('SELECT id, role, password_hash FROM users WHERE lower(email) = lower($1)', [
      email,
    ]);
    return rows;
  } finally {
    await db.end();
  }
}

const login = (app: TestApp, email: string, password: string) =>
  app.http.post('/api/auth/login').send({ email, password });

describe('Area B per-caller rate limit (RATE_LIMIT_USER_PER_MIN)', () => {
  const LIMIT = 8;
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ env: { RATE_LIMIT_USER_PER_MIN: String(LIMIT) } });
  }, 180_000);
  afterAll(async () => {
    await app.close();
  });

  it('answers the caller 429 RATE_LIMITED with Retry-After once over the limit; others, probes and Area A are not held back', async () => {
    // Sign-up and login are anonymous routes, counted per IP, not against the user.
    const limited = await makeUser(app);
    const other = await makeUser(app);

    for (let i = 0; i < LIMIT; i += 1) await app.http.get('/api/auth/me').set(bearer(limited.token)).expect(200);
    const refused = await app.http.get('/api/auth/me').set(bearer(limited.token)).expect(429);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual({
      success: false,
      data: null,
      error: { code: 'RATE_LIMITED', message: expect.any(String), details: { retryAfterSeconds: retryAfter } },
      traceId: refused.headers['x-request-id'],
    });

    // Probes are never limited: more of them than the limit, anonymous and with the limited user's token.
    for (let i = 0; i < LIMIT + 2; i += 1) {
      await app.http.get('/api/health').expect(200);
      await app.http.get('/api/ready').set(bearer(limited.token)).expect(200);
    }

    // Another user has a budget of their own. Their Area A calls (more than the Area B limit) do not spend it.
    const { key } = await makeApiKey(app, other, { scopes: ['tasks:read'] });
    for (let i = 0; i < LIMIT + 2; i += 1) {
      const res = await callTool(app, key, 'list_tasks');
      expect(res.status).toBe(200);
    }
    const me = await app.http.get('/api/auth/me').set(bearer(other.token)).expect(200);
    expect(me.body.data.id).toBe(other.id);

    // The limited user is still limited (the unlimited calls above did not reset anything), on every
    // Area B route: the budget is the caller's, not one per route.
    await app.http.get('/api/auth/me').set(bearer(limited.token)).expect(429);
    for (const path of ['/api/projects', '/api/api-keys', '/api/agent/history']) {
      const res = await app.http.get(path).set(bearer(limited.token)).expect(429);
      expect(res.body.error.code).toBe('RATE_LIMITED');
    }
  });
});

describe('sign-up, the ADMIN_EMAIL account and password storage across restarts of one installation', () => {
  let database: TestDatabase;
  let app: TestApp | undefined;
  const first = {
    email: `first-${randomBytes(3).toString('hex')}@example.com`,
    password: 'first-password-1',
    name: 'First',
  };
  const member = {
    email: `Member-${randomBytes(3).toString('hex')}@Example.com`,
    password: 'member-password-1',
    name: 'Member',
  };
  const twin = { email: `twin-${randomBytes(3).toString('hex')}@example.com`, password: member.password, name: 'Twin' };
  const adminPassword = 'admin-password-from-env';

  beforeAll(async () => {
    database = await createTestDatabase();
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await database.drop();
  });

  const boot = async (env: Record<string, string> = {}) => {
    await app?.close();
    app = undefined;
    app = await startTestApp({ database, env });
    return app;
  };

  it('stores passwords only as salted scrypt hashes (memory-hard), in the format the hasher documents', async () => {
    const t = await boot();
    const registered = await t.http.post('/api/auth/register').send(first).expect(201);
    expect(registered.body.data.role).toBe('admin');
    await t.http.post('/api/auth/register').send(member).expect(201);
    await t.http.post('/api/auth/register').send(twin).expect(201);

    const [row] = await userRows(database, member.email);
    const [twinRow] = await userRows(database, twin.email);
    for (const hash of [row.password_hash, twinRow.password_hash]) {
      expect(hash).not.toContain(member.password);
      // scrypt$N$r$p$salt$hash; N of at least 2^14 blocks of 128·r bytes is what makes it memory-hard.
      const [scheme, n, r, p, salt, derived] = hash.split('$');
      expect(scheme).toBe('scrypt');
      expect(Number(n)).toBeGreaterThanOrEqual(2 ** 14);
      expect(Number.isInteger(Math.log2(Number(n)))).toBe(true);
      expect(Number(r)).toBeGreaterThanOrEqual(8);
      expect(Number(p)).toBeGreaterThanOrEqual(1);
      expect(Buffer.from(salt, 'base64').length).toBeGreaterThanOrEqual(16);
      expect(Buffer.from(derived, 'base64').length).toBeGreaterThanOrEqual(32);
    }
    // Salted: the same password gives two different hashes.
    expect(row.password_hash).not.toBe(twinRow.password_hash);
    // And it is the password that works.
    await login(t, member.email, member.password).expect(200);
  });

  it('AUTH_SIGNUP=closed refuses registration with 403 FORBIDDEN; ADMIN_EMAIL promotes an existing user and sets ADMIN_PASSWORD', async () => {
    const t = await boot({
      AUTH_SIGNUP: 'closed',
      ADMIN_EMAIL: member.email.toUpperCase(),
      ADMIN_PASSWORD: adminPassword,
    });

    const refused = await t.http
      .post('/api/auth/register')
      .send({ email: 'late@example.com', password: 'late-password-1', name: 'Late' })
      .expect(403);
    expect(refused.body).toMatchObject({
      success: false,
      data: null,
      error: { code: 'FORBIDDEN', message: expect.stringMatching(/sign-up is closed/i) },
    });
    await login(t, 'late@example.com', 'late-password-1').expect(401);
    // An email that is taken gets the same refusal, not a 409 that would tell whether it exists.
    const taken = await t.http.post('/api/auth/register').send(first).expect(403);
    expect(taken.body.error.code).toBe('FORBIDDEN');
    // The account page asks before showing its sign-up form.
    expect((await t.http.get('/api/auth/signup').expect(200)).body.data).toEqual({ open: false });

    // The named user is now an admin, with ADMIN_PASSWORD (the old password no longer works).
    await login(t, member.email, member.password).expect(401);
    const promoted = await login(t, member.email, adminPassword).expect(200);
    expect(promoted.body.data.user).toMatchObject({ email: member.email.toLowerCase(), name: 'Member', role: 'admin' });
    const me = await t.http.get('/api/auth/me').set(bearer(promoted.body.data.accessToken)).expect(200);
    expect(me.body.data.role).toBe('admin');
    await t.http.get('/api/admin/github/repos').set(bearer(promoted.body.data.accessToken)).expect(200);

    // Existing accounts keep working, with their roles.
    const firstLogin = await login(t, first.email, first.password).expect(200);
    expect(firstLogin.body.data.user.role).toBe('admin');
    const twinLogin = await login(t, twin.email, twin.password).expect(200);
    expect(twinLogin.body.data.user.role).toBe('member');
    await t.http.get('/api/admin/github/repos').set(bearer(twinLogin.body.data.accessToken)).expect(403);
  });

  it('ADMIN_EMAIL is idempotent across restarts, and creates the admin when no such user exists', async () => {
    let t = await boot({ AUTH_SIGNUP: 'closed', ADMIN_EMAIL: member.email, ADMIN_PASSWORD: adminPassword });
    expect(await userRows(database, member.email)).toEqual([expect.objectContaining({ role: 'admin' })]);
    expect((await login(t, member.email, adminPassword).expect(200)).body.data.user.role).toBe('admin');

    const ops = { email: `ops-${randomBytes(3).toString('hex')}@example.com`, password: 'ops-password-from-env' };
    t = await boot({ AUTH_SIGNUP: 'closed', ADMIN_EMAIL: ops.email, ADMIN_PASSWORD: ops.password });
    // Not the first user of the installation, and still an admin.
    const opsLogin = await login(t, ops.email, ops.password).expect(200);
    expect(opsLogin.body.data.user.role).toBe('admin');
    await t.http.get('/api/admin/github/repos').set(bearer(opsLogin.body.data.accessToken)).expect(200);
    const [opsRow] = await userRows(database, ops.email);
    expect(opsRow.password_hash.startsWith('scrypt$')).toBe(true);
    expect(opsRow.password_hash).not.toContain(ops.password);

    t = await boot({ AUTH_SIGNUP: 'closed', ADMIN_EMAIL: ops.email, ADMIN_PASSWORD: ops.password });
    expect(await userRows(database, ops.email)).toEqual([expect.objectContaining({ id: opsRow.id, role: 'admin' })]);
    await login(t, ops.email, ops.password).expect(200);
  }, 120_000);

  it('AUTH_SIGNUP=closed on an empty installation refuses even the first registration; ADMIN_EMAIL is the way in', async () => {
    const fresh = await createTestDatabase();
    const admin = { email: `root-${randomBytes(3).toString('hex')}@example.com`, password: 'root-password-from-env' };
    let closed: TestApp | undefined;
    try {
      closed = await startTestApp({ database: fresh, env: { AUTH_SIGNUP: 'closed' } });
      const res = await closed.http
        .post('/api/auth/register')
        .send({ email: admin.email, password: 'first-ever-password', name: 'First' })
        .expect(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      await login(closed, admin.email, 'first-ever-password').expect(401);
      await closed.close();

      closed = await startTestApp({
        database: fresh,
        env: { AUTH_SIGNUP: 'closed', ADMIN_EMAIL: admin.email, ADMIN_PASSWORD: admin.password },
      });
      const signedIn = await login(closed, admin.email, admin.password).expect(200);
      expect(signedIn.body.data.user).toMatchObject({ email: admin.email, role: 'admin' });
      await closed.http.get('/api/admin/github/repos').set(bearer(signedIn.body.data.accessToken)).expect(200);
    } finally {
      await closed?.close();
      await fresh.drop();
    }
  }, 120_000);
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Complete HTTP/1.1 responses in `raw`, in order; interim 1xx answers are skipped. */
function parseResponses(raw: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let offset = 0;
  for (;;) {
    const headEnd = raw.indexOf('\r\n\r\n', offset);
    if (headEnd < 0) return responses;
    const [statusLine, ...headerLines] = raw.subarray(offset, headEnd).toString('latin1').split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    const headers = Object.fromEntries(
      headerLines.map((line) => [
        line.slice(0, line.indexOf(':')).trim().toLowerCase(),
        line.slice(line.indexOf(':') + 1).trim(),
      ]),
    );
    if (status < 200) {
      offset = headEnd + 4;
      continue;
    }
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length)) throw new Error(`response without Content-Length: ${statusLine}`);
    if (raw.length < headEnd + 4 + length) return responses;
    const body = raw.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
    responses.push({ status, headers, body: body ? JSON.parse(body) : null });
    offset = headEnd + 4 + length;
  }
}

/** One keep-alive connection, written to by hand, so requests can be pipelined onto it. */
class RawConnection {
  private received = Buffer.alloc(0);
  private readonly waiters: (() => void)[] = [];
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.waiters.splice(0).forEach((wake) => wake());
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiters.splice(0).forEach((wake) => wake());
    });
  }

  static async open(baseUrl: string): Promise<RawConnection> {
    const url = new URL(baseUrl);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawConnection(socket);
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** Waits until `predicate` holds for the bytes received so far; fails if the server closes first. */
  async until(predicate: (raw: Buffer) => boolean): Promise<void> {
    while (!predicate(this.received)) {
      if (this.closed) throw new Error(`connection closed; received: ${this.received.toString('latin1')}`);
      await new Promise<void>((wake) => this.waiters.push(wake));
    }
  }

  async responses(count: number): Promise<RawResponse[]> {
    await this.until((raw) => parseResponses(raw).length >= count);
    return parseResponses(this.received);
  }

  end(): void {
    this.socket.end();
  }
}

/**
 * Readiness during shutdown. The draining flag is set by the process's SIGTERM handler (src/main.ts), not
 * by a Nest hook, so an in-process app.close() never sets it: this runs `node dist/src/main.js` for real.
 * After SIGTERM the listener stays open for SHUTDOWN_DRAIN_DELAY_MS (here the 5 s default) while readiness
 * answers 503, so new connections are still served; requests that arrive while draining are answered
 * with `Connection: close`, so a keep-alive client (a load balancer) reconnects instead of reusing a
 * connection that the close will cut.
 */
describe('readiness while shutting down (real process, SIGTERM)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-drain-'));
  let database: TestDatabase | undefined;

  beforeAll(async () => {
    buildOnce();
    // On the real services the process uses its own fresh database; otherwise its embedded default.
    if (process.env.TEST_DATABASE_URL) database = await createTestDatabase();
  }, 180_000);
  afterAll(async () => {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers /api/ready 503 DEPENDENCY_UNAVAILABLE (and /api/health 200 degraded) once SIGTERM has arrived, then exits 0', async () => {
    // SHUTDOWN_DRAIN_DELAY_MS: the default, given because startAppProcess shortens it for processes stopped only to clean up.
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      REDIS_PREFIX: `atrium-drain-${randomBytes(4).toString('hex')}`,
      SHUTDOWN_DRAIN_DELAY_MS: '5000',
    };
    if (database) env.DATABASE_URL = database.url;
    if (process.env.TEST_REDIS_URL) env.REDIS_URL = process.env.TEST_REDIS_URL;
    const proc = await startAppProcess(env);
    let connection: RawConnection | undefined;
    try {
      const credentials = { email: 'drain@example.com', password: 'drain-password-1', name: 'Drain' };
      const registered = await fetch(`${proc.baseUrl}/api/auth/register`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(credentials),
      });
      expect(registered.status).toBe(201);

      connection = await RawConnection.open(proc.baseUrl);
      connection.write('GET /api/ready HTTP/1.1\r\nHost: atrium\r\n\r\n');
      const [before] = await connection.responses(1);
      expect(before.status).toBe(200);

      // A login whose body is still arriving: "100 Continue" proves the server has it in flight.
      const body = JSON.stringify({ email: credentials.email, password: credentials.password });
      connection.write(
        'POST /api/auth/login HTTP/1.1\r\nHost: atrium\r\nContent-Type: application/json\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n${body.slice(0, 10)}`,
      );
      await connection.until((raw) => raw.includes('HTTP/1.1 100 Continue'));

      proc.child.kill('SIGTERM');
      while (!proc.output().includes('"msg":"shutting down"')) {
        if (proc.child.exitCode !== null) throw new Error(`exited before draining:\n${proc.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      connection.write(body.slice(10));
      const [, inFlight] = await connection.responses(2);
      connection.end();

      // The request in flight when the signal came is still served.
      expect(inFlight.status).toBe(200);
      expect(inFlight.body.data.user.email).toBe(credentials.email);
      // New connections during the drain delay are still answered.
      const [ready, health] = await Promise.all(
        ['/api/ready', '/api/health'].map(async (path) => {
          const res = await fetch(`${proc.baseUrl}${path}`);
          return {
            status: res.status,
            headers: { 'x-request-id': res.headers.get('x-request-id') },
            body: (await res.json()) as any,
          };
        }),
      );
      // Readiness fails so the load balancer stops sending traffic; liveness still answers.
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ success: false, data: null, error: { code: 'DEPENDENCY_UNAVAILABLE' } });
      expect(ready.body.traceId).toBe(ready.headers['x-request-id']);
      expect(health.status).toBe(200);
      expect(health.body.data.status).toBe('degraded');

      expect(await proc.exited).toBe(0);
      expect(proc.output()).toContain('stopped cleanly');
    } finally {
      connection?.end();
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill('SIGKILL');
        await proc.exited;
      }
    }
  }, 240_000);
});
