import type { Caller } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import type { CredentialPlugin } from './credential-kind.js';
import { CredentialRegistry } from './credential-registry.js';

function kind(overrides: Partial<CredentialPlugin> & Pick<CredentialPlugin, 'name'>): CredentialPlugin {
  return {
    via: overrides.name,
    prefixes: [],
    doors: {},
    invalidMessage: `${overrides.name} is not valid`,
    describe: () => `a ${overrides.name}`,
    wrongDoor: () => `${overrides.name} does not work here`,
    authenticate: () => Promise.resolve(null),
    ...overrides,
  };
}

const caller = (name: string): Caller => ({
  kind: name,
  via: name,
  credentialId: 'id-1',
  userId: 'u',
  actor: { userId: 'u', projectIds: null, repos: null },
  scopes: [],
  confirmWrites: false,
  expiresAt: null,
  budgetKey: `${name}:id-1`,
});

function registry(...kinds: CredentialPlugin[]): CredentialRegistry {
  const built = new CredentialRegistry(undefined as never, undefined as never);
  built.register(kinds);
  return built;
}

const key = kind({
  name: 'key',
  prefixes: [{ prefix: 'atk_', label: 'a key', bearer: true }],
  doors: { tools: true },
  position: 1,
  howToGet: 'a key (get one at /keys)',
  expected: 'a key (atk_…)',
  authenticate: (token) => Promise.resolve(token === 'atk_good' ? { caller: caller('key'), user: {} } : null),
});
const grant = kind({
  name: 'grant',
  doors: { tools: true },
  position: 2,
  howToGet: 'a grant token',
  expected: 'a grant (atg_…)',
  prefixes: [
    { prefix: 'atg_', label: 'a grant', bearer: true },
    { prefix: 'atq_', label: 'a refresh token', bearer: false },
  ],
  describe: (token) => (token.startsWith('atq_') ? 'a refresh token' : 'a grant'),
});
const session = kind({
  name: 'session',
  takesUnprefixed: true,
  doors: { backend: 'every-route' },
  describe: () => 'a session',
});
const pinned = kind({
  name: 'pinned',
  prefixes: [{ prefix: 'atp_', label: 'a pinned token', bearer: true }],
  doors: { backend: 'opted-in-routes' },
});

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AppException)) throw new Error(`expected an AppException, got ${String(error)}`);
  return { code: error.code, message: error.message };
}

describe('CredentialRegistry', () => {
  const all = registry(grant, key, session, pinned);

  it('refuses to start on a shared or overlapping prefix, a shared name, or two unprefixed kinds', () => {
    expect(() =>
      registry(key, kind({ name: 'other', prefixes: [{ prefix: 'atk_x', label: 'x', bearer: true }] })),
    ).toThrow(/share the prefix "atk_x"/);
    expect(() => registry(key, kind({ name: 'key' }))).toThrow(/two credential kinds are named "key"/);
    expect(() => registry(session, kind({ name: 'jwt2', takesUnprefixed: true }))).toThrow(
      /only one credential kind may take unprefixed bearers/,
    );
    expect(() => registry(kind({ name: 'door', doors: { tools: true } }))).toThrow(/does not say how to get one/);
  });

  it('finds a kind by prefix, else the unprefixed kind', () => {
    expect(all.kindOf('atk_abc')?.name).toBe('key');
    expect(all.kindOf('atq_abc')?.name).toBe('grant');
    expect(all.kindOf('eyJ.x.y')?.name).toBe('session');
    expect(registry(key).kindOf('eyJ.x.y')).toBeUndefined();
  });

  const LOCAL = { ip: '127.0.0.1' };

  it('names the tool doors kinds in position order, and what it got', async () => {
    expect(await refusal(all.authenticateTool(undefined, LOCAL))).toEqual({
      code: 'missing_api_key',
      message: 'This route needs a key (get one at /keys) or a grant token',
    });
    const wrong =
      'This route expects a key (atk_…) or a grant (atg_…), got %s; user and project tokens work only on the backend routes under /api';
    expect((await refusal(all.authenticateTool('atp_x', LOCAL))).message).toBe(wrong.replace('%s', 'a pinned'));
    expect((await refusal(all.authenticateTool('atq_x', LOCAL))).message).toBe(wrong.replace('%s', 'a refresh token'));
    expect((await refusal(all.authenticateTool('plain', LOCAL))).message).toBe(wrong.replace('%s', 'a session'));
    expect(await refusal(all.authenticateTool('atk_bad', LOCAL))).toEqual({
      code: 'invalid_api_key',
      message: 'key is not valid',
    });
    expect((await all.authenticateTool('atk_good', LOCAL)).caller.kind).toBe('key');
  });

  it('opens the backend only to kinds that open it, opted-in routes only to opted-in kinds', async () => {
    expect(await refusal(all.authenticateBackend('atk_good', true))).toEqual({
      code: 'auth_invalid',
      message: 'key does not work here',
    });
    expect((await refusal(all.authenticateBackend('atp_x', false))).message).toBe('pinned does not work here');
    expect((await refusal(all.authenticateBackend('atp_x', true))).message).toBe('pinned is not valid');
    expect((await refusal(all.authenticateBackend('atq_x', true))).message).toBe('grant does not work here');
  });

  it('spends and records through the caller’s own kind', async () => {
    const spent: string[] = [];
    const spender = registry(
      kind({
        ...key,
        spend: (c) => Promise.resolve(void spent.push(c.budgetKey)),
        recordUsage: (c, u) => void spent.push(`${c.kind}:${u.status}`),
      }),
    );
    await spender.spend(caller('key'));
    spender.recordUsage(caller('key'), { tool: 'x', status: 200, durationMs: 1 });
    expect(spent).toEqual(['key:id-1', 'key:200']);
    expect(() => spender.of({ kind: 'nobody' })).toThrow(/No credential kind "nobody"/);
  });
});
