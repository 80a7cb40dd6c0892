import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from './app-config.js';
import { ConfigError } from './config-error.js';

describe('loadConfig', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'atrium-config-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('applies the documented defaults', () => {
    const config = loadConfig({ DATA_DIR: dataDir });
    expect(config.port).toBe(3000);
    expect(config.role).toBe('all');
    expect(config.database.url).toBeUndefined();
    expect(config.redis.url).toBeUndefined();
    expect(config.limits).toMatchObject({
      keyCallsPerMinute: 300,
      areaBCallsPerMinute: 600,
      jsonBodyBytes: 1024 * 1024,
      uploadMaxBytes: 20 * 1024 * 1024,
    });
    expect(config.mcp.allowedOrigins).toEqual([]);
    expect(config.trustProxy).toBe(false);
  });

  it('reads TRUST_PROXY in Express syntax and refuses what would trust everybody or nobody meant', () => {
    expect(
      loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::/8, 192.168.1.7' }).trustProxy,
    ).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '192.168.1.7']);
    expect(loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    for (const bad of ['true', 'proxy.internal', '10.0.0.0/40', '10.0.0.0/8/1']) {
      expect(() => loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: bad })).toThrow(ConfigError);
    }
  });

  it('generates secrets once under DATA_DIR (0600) and reuses them on the next start', () => {
    const first = loadConfig({ DATA_DIR: dataDir });
    const second = loadConfig({ DATA_DIR: dataDir });
    expect(second.secrets).toEqual(first.secrets);
    expect(first.secrets.jwtSecret.length).toBeGreaterThanOrEqual(32);
    expect(Buffer.from(first.secrets.encryptionKey, 'base64')).toHaveLength(32);
    const file = join(dataDir, 'secrets.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8')).tokenPepper).toBe(first.secrets.tokenPepper);
  });

  it('prefers secrets from the environment', () => {
    const jwt = 'j'.repeat(40);
    expect(loadConfig({ DATA_DIR: dataDir, JWT_SECRET: jwt }).secrets.jwtSecret).toBe(jwt);
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
    [{ APP_ROLE: 'both' }, /APP_ROLE must be one of all, api, worker/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must use postgres: or postgresql:/],
    [{ REDIS_URL: 'not a url' }, /REDIS_URL must be a URL/],
    [{ JWT_SECRET: 'short' }, /JWT_SECRET must be at least 32 characters/],
    [{ ENCRYPTION_KEY: 'x'.repeat(40) }, /ENCRYPTION_KEY must be 32 bytes/],
    [{ ADMIN_EMAIL: 'a@b.c' }, /ADMIN_PASSWORD must be set together/],
    [{ ADMIN_EMAIL: 'a@b.c', ADMIN_PASSWORD: 'short' }, /ADMIN_PASSWORD must be at least 10/],
    [{ NODE_ENV: 'production' }, /JWT_SECRET is required when NODE_ENV=production/],
    [
      { NODE_ENV: 'production', MCP_CONFORMANCE_FIXTURES: 'true' },
      /MCP_CONFORMANCE_FIXTURES must not be true when NODE_ENV=production/,
    ],
    [{ MCP_CONFORMANCE_FIXTURES: 'yes' }, /MCP_CONFORMANCE_FIXTURES/],
    [{ RAG_HYBRID_VECTOR_WEIGHT: '1.5' }, /RAG_HYBRID_VECTOR_WEIGHT must be between 0 and 1/],
    [{ RAG_HYBRID_VECTOR_WEIGHT: 'half' }, /RAG_HYBRID_VECTOR_WEIGHT must be a number/],
  ])('rejects %j with one line naming the variable', (env, message) => {
    let error: unknown;
    try {
      loadConfig({ DATA_DIR: dataDir, ...env });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it('reads the RAG search settings', () => {
    expect(loadConfig({ DATA_DIR: dataDir }).ragSearch).toEqual({ hybridVectorWeight: 0.15 });
    expect(loadConfig({ DATA_DIR: dataDir, RAG_HYBRID_VECTOR_WEIGHT: '.4' }).ragSearch).toEqual({
      hybridVectorWeight: 0.4,
    });
  });

  it('starts in production when every secret is given', () => {
    const config = loadConfig({
      DATA_DIR: dataDir,
      NODE_ENV: 'production',
      JWT_SECRET: 'j'.repeat(40),
      API_KEY_PEPPER: 'p'.repeat(40),
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect(config.env).toBe('production');
  });

  it('reads the metrics and tracing settings: metrics on the main port and no tracing by default', () => {
    expect(loadConfig({ DATA_DIR: dataDir })).toMatchObject({
      metrics: { enabled: true, port: undefined, token: undefined },
      tracing: { endpoint: undefined, serviceName: 'atrium' },
    });
    const config = loadConfig({
      DATA_DIR: dataDir,
      METRICS_ENABLED: 'false',
      METRICS_PORT: '9464',
      METRICS_TOKEN: 'scrape-token-0123456789',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_SERVICE_NAME: 'atrium-api',
    });
    expect(config.metrics).toEqual({ enabled: false, port: 9464, token: 'scrape-token-0123456789' });
    expect(config.tracing).toEqual({ endpoint: 'http://collector:4318', serviceName: 'atrium-api' });
    for (const [name, bad] of [
      ['METRICS_TOKEN', 'short'],
      ['METRICS_PORT', '70000'],
      ['METRICS_PORT', '3000'],
      ['METRICS_ENABLED', 'yes'],
      ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
      ['OTEL_EXPORTER_OTLP_ENDPOINT', 'grpc://collector:4317'],
    ]) {
      expect(() => loadConfig({ DATA_DIR: dataDir, [name]: bad })).toThrow(name);
    }
  });
});
