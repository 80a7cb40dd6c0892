import {
  addressInRanges,
  canonicalCidr,
  keyPolicyViolations,
  oauthClientAllowed,
  type AdminPolicy,
} from './admin-policy.js';

const OPEN: AdminPolicy = {
  maxKeyLifetimeDays: null,
  allowedKeyScopes: null,
  requireConfirmWritesForWriteScopes: false,
  allowedIps: null,
  allowedOAuthClients: null,
  maxCredentialsPerUser: 50,
};
const DAY = 86_400_000;
const isWrite = (scope: string) => scope.endsWith(':write');

describe('admin policy rules', () => {
  it('canonicalises CIDR ranges and refuses what is not one', () => {
    expect(canonicalCidr('10.0.0.0/8')).toBe('10.0.0.0/8');
    expect(canonicalCidr('127.0.0.1')).toBe('127.0.0.1/32');
    expect(canonicalCidr('::1')).toBe('::1/128');
    expect(canonicalCidr('2001:DB8::/32')).toBe('2001:db8::/32');
    for (const bad of ['10.0.0.0/33', '300.1.1.1', '::1/129', '', 'localhost', '10.0.0.0/', '1.2.3.4/8/8', 42, null])
      expect([bad, canonicalCidr(bad)]).toEqual([bad, undefined]);
    expect(canonicalCidr('1'.repeat(100))).toBeUndefined();
  });

  it('matches client addresses, IPv4-mapped IPv6 as IPv4, and nothing for a missing or junk address', () => {
    expect(addressInRanges('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(addressInRanges('::ffff:127.0.0.1', ['127.0.0.0/8'])).toBe(true);
    expect(addressInRanges('11.0.0.1', ['10.0.0.0/8'])).toBe(false);
    expect(addressInRanges('::1', ['127.0.0.0/8'])).toBe(false);
    expect(addressInRanges('::1', ['::1/128'])).toBe(true);
    expect(addressInRanges(undefined, ['0.0.0.0/0'])).toBe(false);
    expect(addressInRanges('not-an-ip', ['0.0.0.0/0'])).toBe(false);
    expect(addressInRanges('10.0.0.1', [])).toBe(false);
  });

  it('allows OAuth clients by id, metadata URL host or registered name, case-insensitively', () => {
    const metadata = { clientId: 'https://App.Example.com/oauth/client.json', clientName: 'Example' };
    const registered = { clientId: 'c_123', clientName: 'Claude Desktop' };
    expect(oauthClientAllowed(null, registered)).toBe(true);
    expect(oauthClientAllowed(['app.example.com'], metadata)).toBe(true);
    expect(oauthClientAllowed(['example.com'], metadata)).toBe(false);
    expect(oauthClientAllowed(['claude desktop'], registered)).toBe(true);
    expect(oauthClientAllowed(['c_123'], registered)).toBe(true);
    expect(oauthClientAllowed([], registered)).toBe(false);
    // A registered client's id is not a URL: its "host" is never consulted.
    expect(oauthClientAllowed(['app.example.com'], { clientId: 'app.example.com/x', clientName: 'x' })).toBe(false);
  });

  it('names every rule a key breaks, and none under the defaults', () => {
    const createdAt = new Date('2026-01-01T00:00:00Z');
    const key = { scopes: ['tasks:read', 'tasks:write'], confirmWrites: false, createdAt, expiresAt: null };
    expect(keyPolicyViolations(OPEN, key, isWrite)).toEqual([]);
    const strict: AdminPolicy = {
      ...OPEN,
      maxKeyLifetimeDays: 90,
      allowedKeyScopes: ['tasks:read'],
      requireConfirmWritesForWriteScopes: true,
    };
    expect(keyPolicyViolations(strict, key, isWrite)).toEqual([
      'maxKeyLifetimeDays',
      'allowedKeyScopes',
      'requireConfirmWritesForWriteScopes',
    ]);
    const fits = {
      scopes: ['tasks:read'],
      confirmWrites: false,
      createdAt,
      expiresAt: new Date(+createdAt + 90 * DAY),
    };
    expect(keyPolicyViolations(strict, fits, isWrite)).toEqual([]);
    expect(keyPolicyViolations(strict, { ...fits, expiresAt: new Date(+createdAt + 91 * DAY) }, isWrite)).toEqual([
      'maxKeyLifetimeDays',
    ]);
  });
});
