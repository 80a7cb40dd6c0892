/**
 * `npm test`: the whole suite in two phases, or Jest as it is when given arguments.
 *
 * With no arguments: the unit, medium and e2e tiers first, spread over TEST_WORKERS Jest workers (default 2), since
 * each of their files owns its database, Redis prefix, ports and folders and most of their time is spent booting a
 * module graph or waiting on PostgreSQL, together with the built and drill files that time nothing (BESIDE in
 * jest.config.js); then the other built and drill files one at a time, because they kill processes and bound how fast
 * things drain or recover, which a second file beside them would skew.
 * Both phases run even when the first fails, so one run shows every failure; the exit code is the first non-zero one.
 *
 * With arguments (`npm test -- test/x.e2e-spec.ts`, `--selectProjects …`): one Jest run in band, as before.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(dirname(process.argv[1]), '..');
const JEST = join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');

function jest(args: string[], phase?: 'parallel' | 'serial'): number {
  const result = spawnSync(process.execPath, ['--experimental-vm-modules', JEST, ...args], {
    cwd: ROOT,
    stdio: 'inherit',
    env: phase ? { ...process.env, TEST_PHASE: phase } : process.env,
  });
  return result.status ?? 1;
}

function phase(title: string, which: 'parallel' | 'serial', args: string[]): { status: number; seconds: number } {
  process.stdout.write(`\n=== npm test: ${title}\n`);
  const started = Date.now();
  const status = jest(args, which);
  return { status, seconds: (Date.now() - started) / 1000 };
}

const given = process.argv.slice(2);
if (given.length > 0) process.exit(jest(['--runInBand', ...given]));

const workers = Number(process.env.TEST_WORKERS ?? 2);
if (!Number.isInteger(workers) || workers < 1) {
  process.stderr.write(`TEST_WORKERS must be a positive integer (got "${process.env.TEST_WORKERS}")\n`);
  process.exit(2);
}
const parallel = phase(`unit, medium, e2e and the untimed built and drill files on ${workers} workers`, 'parallel', [
  '--selectProjects',
  'unit',
  'medium',
  'e2e',
  'built',
  'drills',
  workers === 1 ? '--runInBand' : `--maxWorkers=${workers}`,
]);
const serial = phase('timed built and drill files, one at a time', 'serial', [
  '--selectProjects',
  'built',
  'drills',
  '--runInBand',
]);
process.stdout.write(
  `\n=== npm test: parallel phase ${parallel.seconds.toFixed(0)} s (exit ${parallel.status}), ` +
    `serial phase ${serial.seconds.toFixed(0)} s (exit ${serial.status})\n`,
);
process.exit(parallel.status !== 0 ? parallel.status : serial.status);
