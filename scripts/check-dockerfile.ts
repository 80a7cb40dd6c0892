/**
 * Checks the Dockerfile the way a build would, on a machine without a Docker engine (CI here):
 *
 * 1. Rules read from the file (a subset of hadolint's, plus this project's): pinned base images,
 *    dependencies installed with `npm ci` (exactly the lock file), absolute WORKDIR, COPY not ADD, no
 *    `cd`/`sudo` in RUN, exec-form CMD, a non-root USER with a data directory it owns, a HEALTHCHECK,
 *    EXPOSE of the app port; and a .dockerignore that keeps .env, data, node_modules, dist, … out.
 * 2. The build, executed: `git archive HEAD` into a temporary directory (what a clean checkout holds),
 *    .dockerignore applied, then each stage's WORKDIR / ENV / COPY / RUN replayed in a directory that
 *    stands for the stage's filesystem (absolute paths under WORKDIR are mapped into it). The final
 *    stage then runs the pre-rollout migration (`node dist/src/database/migrate.js`, no Nest CLI in the image), is
 *    started with its CMD and ENV, and its HEALTHCHECK command must pass.
 *
 * What it cannot check: the base image itself (the host's Node runs the steps), file ownership
 * (checked by reading: the data directory must be copied with --chown of the final USER), and the
 * registry: npm in a RUN takes packages from the host's npm cache where present (--prefer-offline).
 * The started process gets SHUTDOWN_DRAIN_DELAY_MS=0 (its exit code is checked, not the drain).
 *
 * Usage: node scripts/check-dockerfile.ts [--rules-only]   (Node 24 runs TypeScript by stripping types)
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  globSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';

// This file's folder's parent, from argv (the script runs as TypeScript under Node, or compiled in dist/).
const ROOT = resolve(dirname(process.argv[1]), '..');
const REQUIRED_IGNORES = ['.env', 'data', 'node_modules', 'dist', 'test-output', '.git', '*.log'];

interface Instruction {
  line: number;
  keyword: string;
  args: string;
}

interface Stage {
  name: string;
  image: string;
  instructions: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const start = i;
    let logical = lines[i];
    if (/^\s*(#|$)/.test(logical)) continue;
    while (logical.trimEnd().endsWith('\\') && i + 1 < lines.length) {
      i += 1;
      if (/^\s*#/.test(lines[i])) continue;
      logical = `${logical.trimEnd().slice(0, -1)} ${lines[i].trim()}`;
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(logical);
    if (!match) throw new Error(`Dockerfile:${start + 1}: cannot parse "${logical}"`);
    const instruction = { line: start + 1, keyword: match[1].toUpperCase(), args: match[2].trim() };
    if (instruction.keyword === 'FROM') {
      const [image, as, name] = instruction.args.split(/\s+/);
      stages.push({ name: as?.toUpperCase() === 'AS' ? name : String(stages.length), image, instructions: [] });
    } else {
      if (stages.length === 0) throw new Error(`Dockerfile:${start + 1}: ${instruction.keyword} before FROM`);
      stages[stages.length - 1].instructions.push(instruction);
    }
  }
  return stages;
}

/** `ENV A=1 B="x y"` or the legacy `ENV A 1`. */
function parseEnv(args: string): Record<string, string> {
  if (!args.includes('=')) {
    const [key, ...rest] = args.split(/\s+/);
    return { [key]: rest.join(' ') };
  }
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|'([^']*)'|(\S*))/g))
    env[m[1]] = m[3] ?? m[4] ?? m[5] ?? '';
  return env;
}

function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const parsed = JSON.parse(args) as unknown;
    return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** COPY/ADD flags and operands: `--from=build --chown=node:node src… dest`. */
function parseCopy(args: string): { flags: Record<string, string>; sources: string[]; dest: string } {
  const words = execForm(args) ?? args.split(/\s+/);
  const flags: Record<string, string> = {};
  while (words[0]?.startsWith('--')) {
    const [flag, value = ''] = words.shift()!.slice(2).split('=');
    flags[flag] = value;
  }
  const dest = words.pop()!;
  return { flags, sources: words, dest };
}

function checkRules(stages: Stage[], dockerignore: string | undefined): string[] {
  const problems: string[] = [];
  const at = (i: Instruction, message: string) => problems.push(`Dockerfile:${i.line} ${i.keyword}: ${message}`);
  if (stages.length === 0) return ['Dockerfile: no FROM'];
  const names = new Set<string>();
  for (const stage of stages) {
    const [image, tag] = stage.image.split(':');
    if (!names.has(image) && (!tag || tag === 'latest'))
      problems.push(`Dockerfile: FROM ${stage.image}: pin the base image tag (hadolint DL3006/DL3007)`);
    let workdirSet = false;
    for (const i of stage.instructions) {
      if (i.keyword === 'WORKDIR') {
        workdirSet = true;
        if (!posix.isAbsolute(i.args)) at(i, 'use an absolute path (DL3000)');
      }
      if (i.keyword === 'ADD' && !/https?:\/\//.test(i.args)) at(i, 'use COPY for local files (DL3020)');
      if (i.keyword === 'RUN') {
        if (/\bnpm (install|i)\b(?!\s+[^-\s])/.test(i.args))
          at(i, 'install dependencies with `npm ci` (exactly package-lock.json), as .ci/run does');
        if (/(^|&&|;)\s*cd\s/.test(i.args)) at(i, 'use WORKDIR instead of cd (DL3003)');
        if (/\bsudo\b/.test(i.args)) at(i, 'do not use sudo (DL3004)');
        if (/apt-get install/.test(i.args) && !/--no-install-recommends/.test(i.args))
          at(i, 'apt-get install --no-install-recommends (DL3015)');
      }
      if ((i.keyword === 'COPY' || i.keyword === 'RUN') && !workdirSet && stage === stages[stages.length - 1])
        at(i, 'set WORKDIR first');
      if (i.keyword === 'COPY') {
        const from = parseCopy(i.args).flags.from;
        if (from !== undefined && !names.has(from)) at(i, `--from=${from} names no earlier stage`);
      }
    }
    names.add(stage.name);
  }
  const final = stages[stages.length - 1];
  const find = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword);
  const user = find('USER').pop()?.args.split(':')[0];
  if (!user || user === 'root' || user === '0')
    problems.push('Dockerfile: the final stage must switch to a non-root USER (DL3002)');
  const cmd = find('CMD').pop();
  if (!cmd) problems.push('Dockerfile: no CMD');
  else if (!execForm(cmd.args)) at(cmd, 'use the JSON (exec) form so SIGTERM reaches node (DL3025)');
  const healthcheck = find('HEALTHCHECK').pop();
  if (!healthcheck || /^NONE\b/i.test(healthcheck.args))
    problems.push('Dockerfile: the final stage needs a HEALTHCHECK');
  else if (!/\bCMD\b/.test(healthcheck.args)) at(healthcheck, 'HEALTHCHECK needs a CMD');
  const env = Object.assign({}, ...find('ENV').map((i) => parseEnv(i.args))) as Record<string, string>;
  const exposed = find('EXPOSE').flatMap((i) => i.args.split(/\s+/).map((p) => p.split('/')[0]));
  for (const port of [env.PORT ?? '3000', env.WORKER_HTTP_PORT ?? '3001']) {
    if (!exposed.includes(port)) problems.push(`Dockerfile: EXPOSE ${port} (the app's port)`);
  }
  const dataDir = env.DATA_DIR;
  if (!dataDir)
    problems.push(
      'Dockerfile: set ENV DATA_DIR to the directory the app may write (embedded database, generated secrets)',
    );
  else {
    const workdir = find('WORKDIR').pop()?.args ?? '/';
    const owned = find('COPY').some((i) => {
      const copy = parseCopy(i.args);
      return (
        copy.flags.chown?.split(':')[0] === user &&
        posix.resolve(workdir, copy.dest) === posix.resolve(workdir, dataDir)
      );
    });
    const chowned = find('RUN').some((i) => new RegExp(`chown\\b.*\\b${user}\\b.*${dataDir}`).test(i.args));
    if (!owned && !chowned)
      problems.push(
        `Dockerfile: DATA_DIR ${dataDir} must be created owned by USER ${user} (COPY --chown or RUN chown before USER)`,
      );
  }
  if (dockerignore === undefined) problems.push('.dockerignore is missing');
  else {
    const entries = dockerignore
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const required of REQUIRED_IGNORES) {
      if (!entries.some((e) => e === required || e === `${required}/` || e === `/${required}`))
        problems.push(`.dockerignore: add ${required}`);
    }
  }
  return problems;
}

/**
 * npm in a replayed RUN reads the registry's answers from the npm cache the host's own `npm ci` filled, without
 * asking the registry whether they changed (--prefer-offline; what the cache lacks is still downloaded): the same
 * packages, locked by package-lock.json's integrity hashes, without 1,800 requests. A docker build downloads them.
 */
const NPM_PREFER_OFFLINE = { npm_config_prefer_offline: 'true' };

function run(command: string, cwd: string, env: Record<string, string>): void {
  console.log(`  $ ${command}`);
  if (/\bnpm\b/.test(command))
    console.log(
      "    (npm with --prefer-offline: packages from the host's npm cache where present; a docker build downloads them)",
    );
  const result = spawnSync('bash', ['-c', command], {
    cwd,
    env: { ...process.env, ...NPM_PREFER_OFFLINE, ...env },
    stdio: 'inherit',
  });
  if (result.status !== 0) throw new Error(`RUN failed (exit ${result.status}): ${command}`);
}

/** Where a path of a stage's filesystem lives in this simulation. */
function mapPath(stageRoot: string, workdir: string, path: string): string {
  return join(stageRoot, posix.resolve(workdir, path));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as { port: number }).port;
  await new Promise((done) => server.close(done));
  return port;
}

/**
 * docker build's layer cache, for the dependency layer only: a RUN whose stage so far copied only plain files
 * (`COPY package.json package-lock.json ./` then `RUN npm ci …`) is keyed, as Docker keys a layer, by every
 * instruction before it and the content of the files copied; an unchanged key restores the stage as that RUN
 * left it instead of running it again. The build and start steps (after `COPY . .`) always run. The newest
 * two snapshots are kept (about 0.6 GB each). DOCKERFILE_CHECK_NO_CACHE=1 runs every step.
 */
const LAYER_CACHE = join(tmpdir(), 'atrium-dockerfile-layers');
const KEPT_LAYERS = 2;

function sha256(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex');
}

function copyTree(from: string, to: string): void {
  rmSync(to, { recursive: true, force: true });
  const result = spawnSync('cp', ['-a', from, to], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`cp -a ${from} ${to} failed`);
}

function restoreLayer(key: string, stageRoot: string): boolean {
  if (process.env.DOCKERFILE_CHECK_NO_CACHE === '1') return false;
  const cached = join(LAYER_CACHE, key);
  if (!existsSync(join(cached, '.complete'))) return false;
  copyTree(join(cached, 'root'), stageRoot);
  return true;
}

function saveLayer(key: string, stageRoot: string): void {
  if (process.env.DOCKERFILE_CHECK_NO_CACHE === '1') return;
  mkdirSync(LAYER_CACHE, { recursive: true });
  const building = join(LAYER_CACHE, `${key}.${process.pid}.tmp`);
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building);
  copyTree(stageRoot, join(building, 'root'));
  spawnSync('touch', [join(building, '.complete')]);
  rmSync(join(LAYER_CACHE, key), { recursive: true, force: true });
  renameSync(building, join(LAYER_CACHE, key));
  const entries = readdirSync(LAYER_CACHE)
    .filter((entry) => !entry.endsWith('.tmp'))
    .map((entry) => ({ entry, mtime: statSync(join(LAYER_CACHE, entry)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const { entry } of entries.slice(KEPT_LAYERS))
    rmSync(join(LAYER_CACHE, entry), { recursive: true, force: true });
}

async function executeBuild(stages: Stage[], dockerignore: string): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'atrium-dockerfile-'));
  try {
    const context = join(work, 'context');
    mkdirSync(context);
    console.log(`build context: git archive HEAD → ${context}`);
    const archive = spawnSync('bash', ['-c', `git -C "${ROOT}" archive --format=tar HEAD | tar -x -C "${context}"`], {
      stdio: 'inherit',
    });
    if (archive.status !== 0) throw new Error('git archive HEAD failed');
    const patterns = dockerignore
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#') && !l.startsWith('!'));
    for (const pattern of patterns) {
      for (const match of globSync(pattern.replace(/^\//, '').replace(/\/$/, ''), { cwd: context }))
        rmSync(join(context, match), { recursive: true, force: true });
    }
    if (existsSync(join(context, '.env'))) throw new Error('.env reached the build context');

    const roots = new Map<string, string>();
    let final: { root: string; workdir: string; env: Record<string, string> } | undefined;
    for (const stage of stages) {
      const stageRoot = join(work, `stage-${stage.name}`);
      mkdirSync(stageRoot);
      roots.set(stage.name, stageRoot);
      let workdir = '/';
      const env: Record<string, string> = {};
      // The layer key so far (see LAYER_CACHE); `cacheable` until the stage copies a directory (its sources).
      // The host's Node stands in for the image's, so its version is part of the key (native modules, npm).
      let layer = sha256('FROM', stage.image, process.version);
      let cacheable = true;
      console.log(`stage ${stage.name} (FROM ${stage.image}; the host's Node stands in for the image's)`);
      for (const i of stage.instructions) {
        layer = sha256(layer, i.keyword, i.args);
        if (i.keyword === 'WORKDIR') {
          workdir = posix.resolve(workdir, i.args);
          mkdirSync(mapPath(stageRoot, workdir, '.'), { recursive: true });
        } else if (i.keyword === 'ENV') {
          Object.assign(env, parseEnv(i.args));
        } else if (i.keyword === 'COPY') {
          const copy = parseCopy(i.args);
          const fromRoot = copy.flags.from ? roots.get(copy.flags.from)! : context;
          const target = mapPath(stageRoot, workdir, copy.dest);
          for (const source of copy.sources) {
            const from = copy.flags.from ? join(fromRoot, source) : join(context, source);
            if (!existsSync(from))
              throw new Error(
                `Dockerfile:${i.line} COPY: ${source} does not exist${copy.flags.from ? ` in stage ${copy.flags.from}` : ' in the build context'}`,
              );
            if (copy.flags.from || statSync(from).isDirectory()) cacheable = false;
            else layer = sha256(layer, source, readFileSync(from));
            const intoDir = copy.dest.endsWith('/') || copy.sources.length > 1;
            const dest =
              intoDir && !source.endsWith('/') && source !== '.' ? join(target, posix.basename(source)) : target;
            mkdirSync(dirname(dest), { recursive: true });
            cpSync(from, dest, { recursive: true, verbatimSymlinks: true });
          }
        } else if (i.keyword === 'RUN') {
          const shell = execForm(i.args)?.join(' ') ?? i.args;
          // Absolute paths under WORKDIR point into the stage's directory here.
          const mapped = workdir === '/' ? shell : shell.split(workdir).join(mapPath(stageRoot, workdir, '.'));
          if (cacheable && restoreLayer(layer, stageRoot)) {
            console.log(
              `  $ ${shell}  (layer cached: same instructions and copied files as an earlier check, as docker build reuses it)`,
            );
          } else {
            run(mapped, mapPath(stageRoot, workdir, '.'), env);
            if (cacheable) saveLayer(layer, stageRoot);
          }
        }
      }
      final = { root: stageRoot, workdir, env };
    }

    // Start the final stage as the container would, then its HEALTHCHECK must pass.
    const { root, workdir, env } = final!;
    const cwd = mapPath(root, workdir, '.');
    const last = stages[stages.length - 1].instructions;
    const cmd = execForm(last.filter((i) => i.keyword === 'CMD').pop()!.args)!;
    const healthcheck = execForm(
      /\bCMD\s+(.*)$/.exec(last.filter((i) => i.keyword === 'HEALTHCHECK').pop()!.args)![1],
    )!;
    const runtimeEnv: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ...env,
      DATA_DIR: env.DATA_DIR ? mapPath(root, workdir, env.DATA_DIR) : join(cwd, 'data'),
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      WORKER_HTTP_PORT: String(await freePort()),
      // Exit 0 on SIGTERM is checked, not the drain's length: no 5 s of readiness 503 before the listener closes.
      SHUTDOWN_DRAIN_DELAY_MS: '0',
      // NODE_ENV=production requires the secrets, as an operator gives them.
      JWT_SECRET: randomBytes(32).toString('hex'),
      API_KEY_PEPPER: randomBytes(32).toString('hex'),
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
    // The pre-rollout migration operators run from the image (the Helm chart's hook runs the same command): the
    // pruned image has no Nest CLI, so it must be plain node on the build's output.
    if (existsSync(join(cwd, 'node_modules', '@nestjs', 'cli')))
      throw new Error('the final stage still holds the Nest CLI (a dev dependency)');
    const migrateCommand = ['node', 'dist/src/database/migrate.js'];
    console.log(`migrate: ${migrateCommand.join(' ')}`);
    const migrate = spawnSync(migrateCommand[0], migrateCommand.slice(1), { cwd, env: runtimeEnv, encoding: 'utf8' });
    const migrated = /migrations applied/.test(migrate.stdout ?? '');
    if (migrate.status !== 0 || !migrated)
      throw new Error(
        `${migrateCommand.join(' ')} failed (exit ${migrate.status}):\n${migrate.stdout}${migrate.stderr}`,
      );
    console.log('migrate: exited 0, migrations applied');
    console.log(`start: ${cmd.join(' ')} (cwd ${cwd}, DATA_DIR ${runtimeEnv.DATA_DIR})`);
    const child = spawn(cmd[0], cmd.slice(1), { cwd, env: runtimeEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      let healthy = false;
      for (const started = Date.now(); !healthy && Date.now() - started < 120_000 && child.exitCode === null;) {
        await new Promise((done) => setTimeout(done, 1000));
        healthy = spawnSync(healthcheck[0], healthcheck.slice(1), { cwd, env: runtimeEnv }).status === 0;
      }
      if (!healthy) throw new Error(`HEALTHCHECK (${healthcheck.join(' ')}) never passed:\n${output}`);
      console.log(`HEALTHCHECK passed: ${healthcheck.join(' ')}`);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await exited;
    if (code !== 0) throw new Error(`the container's process exited with ${code} on SIGTERM:\n${output}`);
    console.log('SIGTERM: exited 0');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const ignorePath = join(ROOT, '.dockerignore');
  const dockerignore = existsSync(ignorePath) ? readFileSync(ignorePath, 'utf8') : undefined;
  const stages = parseDockerfile(dockerfile);
  const problems = checkRules(stages, dockerignore);
  if (problems.length > 0) {
    console.error(`Dockerfile check failed:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    process.exit(1);
  }
  console.log(`Dockerfile rules: ${stages.length} stages, no problem`);
  if (process.argv.includes('--rules-only')) return;
  await executeBuild(stages, dockerignore!);
  console.log('Dockerfile check passed');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
