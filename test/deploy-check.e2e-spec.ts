import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const CHART = join(ROOT, 'deploy', 'helm', 'atrium');

/** `npm run check:deploy` (helm lint/template, Kubernetes 1.36 schemas, the chart's rules, compose against the README). */
function checkDeploy(env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--disable-warning=MODULE_TYPELESS_PACKAGE_JSON', join(ROOT, 'scripts', 'check-deploy.ts')],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('deployment check (npm run check:deploy)', () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'atrium-deploy-check-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('passes on the committed chart and compose file', async () => {
    const { code, output } = await checkDeploy();
    expect(output).toContain('checked against the Kubernetes 1.36.0 schemas');
    expect(output).toContain('Deployment check passed');
    expect(code).toBe(0);
  }, 180_000);

  it('fails a chart with a misspelt field, a writable root filesystem or a grace period shorter than the drain', async () => {
    const chart = join(scratch, 'chart');
    cpSync(CHART, chart, { recursive: true });
    const helpers = join(chart, 'templates', '_helpers.tpl');
    writeFileSync(
      helpers,
      readFileSync(helpers, 'utf8')
        .replace('readinessProbe:', 'readinesProbe:')
        .replace('readOnlyRootFilesystem: true', 'readOnlyRootFilesystem: false'),
    );
    const values = join(chart, 'values.yaml');
    writeFileSync(
      values,
      readFileSync(values, 'utf8').replace('terminationGracePeriodSeconds: 20', 'terminationGracePeriodSeconds: 10'),
    );
    const { code, output } = await checkDeploy({ CHECK_DEPLOY_CHART: chart });
    expect(code).toBe(1);
    expect(output).toMatch(/Deployment\/atrium-api: types: .*'"readinesProbe"' does not exist in type 'IContainer'/);
    expect(output).toMatch(/container api: readOnlyRootFilesystem must be true/);
    expect(output).toMatch(/container api: readinessProbe must GET \/api\/ready/);
    expect(output).toMatch(/Deployment\/atrium-worker: terminationGracePeriodSeconds must exceed/);
  }, 180_000);

  it('fails a compose file that does not pass PUBLIC_URL or whose header miscounts the workers', async () => {
    const compose = join(scratch, 'docker-compose.yml');
    const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    writeFileSync(
      compose,
      text.replace(/^\s+PUBLIC_URL:\n/m, '').replace('two worker processes', 'one worker process'),
    );
    const { code, output } = await checkDeploy({ CHECK_DEPLOY_COMPOSE: compose });
    expect(code).toBe(1);
    expect(output).toMatch(/docker-compose.yml api: does not pass PUBLIC_URL/);
    expect(output).toMatch(/docker-compose.yml worker: does not pass PUBLIC_URL/);
    expect(output).toMatch(/header: says "one worker" but the worker service runs replicas: 2/);
  }, 180_000);
});
