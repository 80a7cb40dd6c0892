import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOnce, startBuiltServer } from './support/app-process';
import { call, uploadMarkdown } from './support/drill-helpers';
import { createTestDatabase, deploymentEnv } from './support/test-app';
import { sleep, waitFor } from './support/wait';
import { jsonLines } from './support/json-lines';

const ROOT = join(__dirname, '..');

/** The lines a running process has finished writing (a pipe may deliver the last one in pieces). */
const completeLines = (output: string) => output.slice(0, output.lastIndexOf('\n') + 1);

/** Runs a built entry point to its end; stdout and stderr together, in order of arrival. */
function runToExit(script: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', script)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

/**
 * What an operator's log pipeline reads: JSON lines from the first byte to the last, whatever the process does (a
 * refused configuration, a migration run, a server's life from start to a planned drain), readiness 503s of a
 * planned drain at info, and one line per job transition naming the request that caused the job.
 */
describe('JSON logs from the first line to the last', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'atrium-logs-'));

  beforeAll(() => buildOnce(), 240_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a refused configuration is one JSON error line naming the variable, exit 78', async () => {
    for (const [name, value] of [
      ['PORT', 'eighty'],
      ['LOG_LEVEL', 'loud'],
      ['RAG_STALE_AFTER_MS', '-1'],
    ]) {
      const { code, output } = await runToExit('main.js', { DATA_DIR: dataDir, [name]: value });
      expect(code).toBe(78);
      const lines = jsonLines(output);
      expect(lines).toEqual([
        expect.objectContaining({
          level: 'error',
          context: 'Config',
          variable: name,
          msg: expect.stringMatching(new RegExp(`^Invalid configuration: ${name} `)),
        }),
      ]);
    }
    // The worker entry point and the migration script say it the same way.
    const worker = await runToExit('worker.js', { DATA_DIR: dataDir, WORKER_HTTP_PORT: 'x' });
    expect(worker.code).toBe(78);
    expect(jsonLines(worker.output)).toEqual([
      expect.objectContaining({ level: 'error', variable: 'WORKER_HTTP_PORT' }),
    ]);
    const migrate = await runToExit(join('database', 'migrate.js'), { DATA_DIR: dataDir, DATABASE_POOL_SIZE: 'many' });
    expect(migrate.code).toBe(78);
    expect(jsonLines(migrate.output)).toEqual([
      expect.objectContaining({ level: 'error', variable: 'DATABASE_POOL_SIZE' }),
    ]);
  }, 90_000);

  it('a migration run prints JSON lines only, ending with the migrations it applied', async () => {
    const database = process.env.TEST_DATABASE_URL ? await createTestDatabase({ schema: 'empty' }) : undefined;
    const migrationDir = mkdtempSync(join(tmpdir(), 'atrium-migrate-'));
    try {
      const { code, output } = await runToExit(join('database', 'migrate.js'), {
        DATA_DIR: migrationDir,
        LOG_LEVEL: 'debug',
        ...(database ? { DATABASE_URL: database.url } : {}),
      });
      expect(code).toBe(0);
      const lines = jsonLines(output);
      expect(lines[lines.length - 1]).toMatchObject({
        level: 'info',
        msg: 'migrations applied',
        migrations: expect.arrayContaining([expect.any(String)]),
      });
    } finally {
      await database?.drop();
      rmSync(migrationDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a server: an upload logs queued → started → finished with its request id; readiness 503s of a drain are info; every line JSON', async () => {
    const server = await startBuiltServer(process.env.TEST_DATABASE_URL ? 'services' : 'embedded', {
      SHUTDOWN_DRAIN_DELAY_MS: '1500',
      ...deploymentEnv('logs'),
    });
    try {
      const credentials = { email: 'logs@example.com', password: 'logs-test-password', name: 'Logs' };
      expect(
        (await call(server.baseUrl, { method: 'POST', path: '/api/auth/register', body: credentials })).status,
      ).toBe(201);
      const token = (
        await call(server.baseUrl, {
          method: 'POST',
          path: '/api/auth/login',
          body: { email: credentials.email, password: credentials.password },
        })
      ).json.data.accessToken as string;
      const projectId = (
        await call(server.baseUrl, { method: 'POST', path: '/api/projects', token, body: { name: 'Logs' } })
      ).json.data.id as string;
      const requestId = `logs-upload-${Date.now()}`;
      const documentId = await uploadMarkdown(server.baseUrl, token, {
        projectId,
        text: '# Logs\n\nOne line per job transition, with the request that caused the job.',
        fileName: 'logs.md',
        requestId,
      });
      await waitFor(
        'the upload indexed',
        async () =>
          (await call(server.baseUrl, { method: 'GET', path: `/api/documents/${documentId}`, token })).json.data
            .status === 'indexed',
        { timeoutMs: 60_000 },
      );
      const jobLines = await waitFor('the finished line', async () => {
        const lines = jsonLines(completeLines(server.process.output())).filter(
          (line) => line.context === 'Jobs' && line.requestId === requestId,
        );
        return lines.some((line) => line.event === 'finished') ? lines : undefined;
      });
      expect(jobLines.map((line) => line.event)).toEqual(['queued', 'started', 'finished']);
      const jobId = jobLines[0].jobId as string;
      expect(jobLines).toEqual(
        jobLines.map(() =>
          expect.objectContaining({ level: 'info', kind: 'indexing', jobId, msg: expect.stringMatching(/^job /) }),
        ),
      );
      expect(jobLines[0]).toMatchObject({ documents: 1 });
      expect(jobLines[1]).toMatchObject({ attempt: 1, waitedMs: expect.any(Number) });
      expect(jobLines[2]).toMatchObject({ status: 'succeeded', durationMs: expect.any(Number) });

      // A planned drain: readiness answers 503 until the listener closes, and says so at info.
      const drainFrom = completeLines(server.process.output()).length;
      server.process.child.kill('SIGTERM');
      const readiness: number[] = [];
      for (;;) {
        const status = await fetch(`${server.baseUrl}/api/ready`).then(
          (res) => res.status,
          () => 0,
        );
        if (status === 0) break;
        readiness.push(status);
        await sleep(100);
      }
      expect(await server.process.exited).toBe(0);
      expect(readiness.filter((status) => status === 503).length).toBeGreaterThan(3);
      const drainLines = jsonLines(server.process.output().slice(drainFrom));
      const probeLines = drainLines.filter((line) => line.context === 'Access' && line.status === 503);
      expect(probeLines.length).toBe(readiness.filter((status) => status === 503).length);
      expect(probeLines.every((line) => line.level === 'info')).toBe(true);
      expect(drainLines.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
      expect(drainLines[drainLines.length - 1]).toMatchObject({ msg: 'stopped cleanly' });
      // From the first byte to the last.
      expect(() => jsonLines(server.process.output())).not.toThrow();
    } finally {
      await server.stop();
    }
  }, 180_000);
});
