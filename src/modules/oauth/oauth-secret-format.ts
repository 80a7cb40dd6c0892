import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import { apiKeyChecksum, hashApiKey } from '../api-keys/api-key-format.js';

/**
 * OAuth credentials share the API key's shape: prefix + 32 random base62 chars + 6-char base62 CRC32
 * checksum, so secret scanners recognise them and junk is refused without a database hit. Only the HMAC
 * (server pepper, as for API keys) is stored.
 */
export const OAUTH_SECRET_PREFIX = {
  accessToken: 'ato_',
  refreshToken: 'atf_',
  clientSecret: 'atcs_',
  code: 'atac_',
} as const;
export type OAuthSecretKind = keyof typeof OAUTH_SECRET_PREFIX;

/** Public client ids of dynamically registered clients (not a secret). */
export const REGISTERED_CLIENT_ID_PREFIX = 'atc_';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 32;

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += BASE62[randomInt(62)];
  return out;
}

export function generateOAuthSecret(kind: OAuthSecretKind): string {
  const random = randomBase62(RANDOM_LENGTH);
  return `${OAUTH_SECRET_PREFIX[kind]}${random}${apiKeyChecksum(random)}`;
}

export function generateClientId(): string {
  return `${REGISTERED_CLIENT_ID_PREFIX}${randomBase62(24)}`;
}

/** Right prefix, right length, matching checksum; pure, no I/O. */
export function isWellFormedOAuthSecret(candidate: unknown, kind: OAuthSecretKind): candidate is string {
  const prefix = OAUTH_SECRET_PREFIX[kind];
  if (
    typeof candidate !== 'string' ||
    candidate.length !== prefix.length + RANDOM_LENGTH + 6 ||
    !candidate.startsWith(prefix)
  )
    return false;
  const random = candidate.slice(prefix.length, prefix.length + RANDOM_LENGTH);
  if (!/^[0-9A-Za-z]+$/.test(random)) return false;
  const given = Buffer.from(candidate.slice(prefix.length + RANDOM_LENGTH));
  const expected = Buffer.from(apiKeyChecksum(random));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function hashOAuthSecret(secret: string, pepper: string): Buffer {
  return hashApiKey(secret, pepper);
}

/** RFC 7636 S256: BASE64URL(SHA256(verifier)) compared with the stored challenge in constant time. */
export function pkceS256Matches(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const stored = Buffer.from(challenge);
  return computed.length === stored.length && timingSafeEqual(computed, stored);
}

/** RFC 7636 §4.1: 43..128 unreserved characters (a challenge has the same alphabet; S256 gives 43). */
export const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
