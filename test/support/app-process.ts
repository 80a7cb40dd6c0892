import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/**
 * Compiles the app once per test run, so process tests run exactly what `npm start` runs. Jest gives
 * each test file fresh modules, but --runInBand keeps one process: a marker named after its pid lets
 * the second process suite reuse the first one's build.
 */
export function buildOnce(): void {
  const marker = join(ROOT, 'dist', `.test-build-${process.pid}`);
  if (existsSync(marker)) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules', '@nestjs', 'cli', 'bin', 'nest.js'), 'build'], { cwd: ROOT, stdio: 'pipe' });
  writeFileSync(marker, new Date().toISOString());
}

export interface AppProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts `node dist/src/main.js` with the given environment and waits for its "listening" log line
 * ("worker started" for APP_ROLE=worker, which serves no HTTP: its baseUrl is empty).
 */
export async function startAppProcess(env: Record<string, string>, timeoutMs = 90_000): Promise<AppProcess> {
  const readyMsg = env.APP_ROLE === 'worker' ? 'worker started' : 'listening';
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`app did not start in time:\n${output}`)), timeoutMs);
    const scan = () => {
      const line = output.split('\n').find((l) => l.includes(`"msg":"${readyMsg}"`));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line).port as number | undefined) ?? 0);
      }
    };
    child.stdout!.on('data', scan);
    void exited.then((code) => reject(new Error(`app exited with ${code} before listening:\n${output}`)));
  });
  return { child, baseUrl: port ? `http://127.0.0.1:${port}` : '', output: () => output, exited };
}
