/**
 * Runs `nest build` only when what it compiles or copies changed since the build in dist/ (`npm start`'s prestart and
 * the other scripts that run something from dist/), so a start from a current build does not spend a full compile.
 *
 * Why a content hash and not tsc's incremental mode: `nest build` empties dist/ first (deleteOutDir, so no deleted
 * source leaves a stale .js behind) and copies public/, which a tsbuildinfo neither survives nor covers, and even a
 * no-change incremental tsc still parses the whole program; hashing the inputs reads a few megabytes. Why not
 * modification times: a checkout, `cp -a` or a restored cache can leave dist/ newer than sources it was not built
 * from, and a hash cannot be fooled by that.
 *
 * The hash covers every input of the build (BUILD_INPUTS, also package-lock.json: other dependency versions can
 * change what compiles) and is written to dist/.build-inputs only after a build that succeeded.
 *
 * Usage: node scripts/build-if-stale.ts   (Node 24 runs TypeScript by stripping types; prints one line when current)
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** What `nest build` compiles (tsconfig.build.json's include) or copies (nest-cli.json's assets), and what steers it. */
export const BUILD_INPUTS = [
  'src',
  'migrations',
  'public',
  'bench',
  'scripts',
  'nest-cli.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];

function listFiles(root: string, path: string, into: string[]): void {
  if (!existsSync(path)) return;
  if (!statSync(path).isDirectory()) {
    into.push(relative(root, path));
    return;
  }
  for (const entry of readdirSync(path)) listFiles(root, join(path, entry), into);
}

/** sha256 over the sorted paths and contents of every build input under root. */
export function buildInputsHash(root: string): string {
  const files: string[] = [];
  for (const input of BUILD_INPUTS) listFiles(root, join(root, input), files);
  const hash = createHash('sha256');
  for (const file of files.sort())
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(root, file)))
      .update('\0');
  return hash.digest('hex');
}

export function stampPath(root: string): string {
  return join(root, 'dist', '.build-inputs');
}

/** True when dist/ was built, successfully, from exactly the inputs under root now. */
export function distIsCurrent(root: string): boolean {
  const stamp = stampPath(root);
  return existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === buildInputsHash(root);
}

/** `nest build` with the Node running this, then the stamp; throws when the build fails. Returns whether it built. */
export function buildIfStale(root: string, log: (line: string) => void = () => undefined): boolean {
  if (distIsCurrent(root)) return false;
  // The hash is taken before the build: a file edited during the build leaves a stamp that no longer matches.
  const hash = buildInputsHash(root);
  log('dist/ is missing or older than its sources: nest build');
  const result = spawnSync(
    process.execPath,
    [join(root, 'node_modules', '@nestjs', 'cli', 'bin', 'nest.js'), 'build'],
    { cwd: root, stdio: 'inherit' },
  );
  if (result.status !== 0) throw new Error(`nest build failed (exit ${result.status ?? result.signal})`);
  writeFileSync(stampPath(root), `${hash}\n`);
  return true;
}

// Run as a script (not when a test imports it).
if (process.argv[1] && /build-if-stale\.[jt]s$/.test(process.argv[1])) {
  const root = resolve(dirname(process.argv[1]), '..');
  try {
    if (!buildIfStale(root, (line) => console.error(line)))
      console.error('dist/ is current (same sources as its build): no build');
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
