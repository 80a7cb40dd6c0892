import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInputsHash, distIsCurrent, stampPath } from '../scripts/build-if-stale.js';
import { buildOnce } from './support/app-process.js';

const ROOT = join(__dirname, '..');

describe('build only when a build input changed (npm start prestart)', () => {
  describe('the rule, on a scratch tree', () => {
    let root: string;
    const write = (path: string, text: string) => {
      mkdirSync(join(root, path, '..'), { recursive: true });
      writeFileSync(join(root, path), text);
    };
    const stamp = () => {
      mkdirSync(join(root, 'dist'), { recursive: true });
      writeFileSync(stampPath(root), `${buildInputsHash(root)}\n`);
    };

    beforeEach(() => {
      root = mkdtempSync(join(tmpdir(), 'atrium-build-stamp-'));
      write('src/main.ts', 'export const a = 1;\n');
      write('migrations/index.ts', 'export const migrations = [];\n');
      write('public/index.html', '<p>hi</p>\n');
      write('package.json', '{}\n');
      write('tsconfig.json', '{}\n');
    });
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    it('is stale without a build, current once stamped', () => {
      expect(distIsCurrent(root)).toBe(false);
      stamp();
      expect(distIsCurrent(root)).toBe(true);
    });

    it('stays current when only modification times change (a checkout, a copy)', () => {
      stamp();
      const future = new Date(Date.now() + 3_600_000);
      utimesSync(join(root, 'src/main.ts'), future, future);
      expect(distIsCurrent(root)).toBe(true);
    });

    it('is stale after a source, an asset or a config file changes, or a source is added or deleted', () => {
      const changes: Array<() => void> = [
        () => write('src/main.ts', 'export const a = 2;\n'),
        () => write('public/index.html', '<p>bye</p>\n'),
        () => write('tsconfig.json', '{"compilerOptions":{}}\n'),
        () => write('migrations/1700000000000-new.ts', 'export {};\n'),
        () => unlinkSync(join(root, 'migrations/index.ts')),
        () => write('package-lock.json', '{}\n'),
      ];
      for (const change of changes) {
        stamp();
        change();
        expect(distIsCurrent(root)).toBe(false);
      }
    });

    it('ignores what the build does not read (tests, docs)', () => {
      stamp();
      write('test/x.e2e-spec.ts', 'it("x", () => undefined);\n');
      write('docs/x.md', '# x\n');
      expect(distIsCurrent(root)).toBe(true);
    });
  });

  it('`npm start` from a current build starts without compiling, and serves /api/health', async () => {
    buildOnce();
    const stampBefore = readFileSync(stampPath(ROOT), 'utf8');
    const dataDir = mkdtempSync(join(tmpdir(), 'atrium-npm-start-'));
    // npm from the PATH npm test runs with; the project's Node 24 comes first on the PATH of npm scripts.
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        SHUTDOWN_DRAIN_DELAY_MS: '0',
        DATABASE_URL: '',
        REDIS_URL: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      const started = Date.now();
      let port = 0;
      while (!port && Date.now() - started < 200_000 && child.exitCode === null) {
        await new Promise((done) => setTimeout(done, 100));
        const line = output.split('\n').find((l) => l.includes('"msg":"listening"'));
        if (line) port = (JSON.parse(line) as { port: number }).port;
      }
      expect(port).toBeGreaterThan(0);
      const health = await fetch(`http://127.0.0.1:${port}/api/health`);
      expect(health.status).toBe(200);
      console.log(`npm start from a current build: listening and healthy after ${Date.now() - started} ms`);
      expect(output).toContain('dist/ is current');
      expect(output).not.toMatch(/nest build/);
      expect(readFileSync(stampPath(ROOT), 'utf8')).toBe(stampBefore);
    } finally {
      // npm's process group: npm, its shell and node.
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
