import ipaddr from 'ipaddr.js';

/** The organisation's rules for credentials, as the admin set them (API.md "Grants and admin policy"). */
export interface AdminPolicy {
  /** Longest lifetime of a new API key, in days; null: any, never-expiring included. */
  maxKeyLifetimeDays: number | null;
  /** Scopes a new API key may carry; null: every scope of the catalog. */
  allowedKeyScopes: string[] | null;
  /** A new API key with a write scope must confirm writes. */
  requireConfirmWritesForWriteScopes: boolean;
  /** Client address ranges (CIDR) Area A calls may come from; null: anywhere. */
  allowedIps: string[] | null;
  /** OAuth clients that may be authorised: client ID metadata URL hosts, client ids or registered names; null: any. */
  allowedOAuthClients: string[] | null;
  /** Usable API keys and OAuth grants one user may hold at once. */
  maxCredentialsPerUser: number;
}

/** The rules a key is checked against, as named in a 400 and in `outOfPolicy`. */
export type PolicyRule =
  'maxKeyLifetimeDays' | 'allowedKeyScopes' | 'requireConfirmWritesForWriteScopes' | 'allowedIps';

/** What of an API key the policy judges. */
export interface KeyUnderPolicy {
  scopes: readonly string[];
  confirmWrites: boolean;
  createdAt: Date;
  expiresAt: Date | null;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * The rules this key breaks (empty: none). `isWrite` tells a write scope. A key's lifetime is measured from its
 * creation, so a key made before a maximum was set is listed as out of policy, never refused.
 */
export function keyPolicyViolations(
  policy: AdminPolicy,
  key: KeyUnderPolicy,
  isWrite: (scope: string) => boolean,
): PolicyRule[] {
  const broken: PolicyRule[] = [];
  if (
    policy.maxKeyLifetimeDays !== null &&
    (key.expiresAt === null ||
      key.expiresAt.getTime() - key.createdAt.getTime() > policy.maxKeyLifetimeDays * DAY_MS + 60_000)
  )
    broken.push('maxKeyLifetimeDays');
  if (policy.allowedKeyScopes !== null && key.scopes.some((scope) => !policy.allowedKeyScopes!.includes(scope)))
    broken.push('allowedKeyScopes');
  if (policy.requireConfirmWritesForWriteScopes && !key.confirmWrites && key.scopes.some(isWrite))
    broken.push('requireConfirmWritesForWriteScopes');
  return broken;
}

/** A CIDR range in its canonical text, or undefined when the text is not one (a bare address counts as /32 or /128). */
export function canonicalCidr(text: unknown): string | undefined {
  if (typeof text !== 'string' || text.length > 64) return undefined;
  try {
    const [address, bits] = text.includes('/')
      ? ipaddr.parseCIDR(text)
      : (() => {
          const parsed = ipaddr.parse(text);
          return [parsed, parsed.kind() === 'ipv4' ? 32 : 128] as const;
        })();
    if (!ipaddr.isValid(address.toString())) return undefined;
    return `${address.toString()}/${bits}`;
  } catch {
    return undefined;
  }
}

/**
 * Whether a client address falls in one of the ranges. An IPv4-mapped IPv6 address (how a dual-stack socket reports
 * an IPv4 peer) is judged as the IPv4 address it carries; an address that cannot be parsed falls in none.
 */
export function addressInRanges(address: string | undefined, ranges: readonly string[]): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  const client = ipaddr.process(address);
  return ranges.some((range) => {
    try {
      const [network, bits] = ipaddr.parseCIDR(range);
      return client.kind() === network.kind() && client.match(network, bits);
    } catch {
      return false;
    }
  });
}

/** Whether an OAuth client is on the allowlist: by client id, by the host of a client ID metadata URL, or by name. */
export function oauthClientAllowed(
  allowed: readonly string[] | null,
  client: { clientId: string; clientName: string },
): boolean {
  if (allowed === null) return true;
  const names = new Set(allowed.map((entry) => entry.toLowerCase()));
  if (names.has(client.clientId.toLowerCase()) || names.has(client.clientName.toLowerCase())) return true;
  if (!client.clientId.startsWith('https://')) return false;
  try {
    return names.has(new URL(client.clientId).hostname.toLowerCase());
  } catch {
    return false;
  }
}
