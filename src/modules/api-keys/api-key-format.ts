import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Personal API key: `atr_` + 32 random base62 chars + 6-char base62 CRC32 of the random part.
 * The checksum lets secret scanners and the server reject typos and junk without touching the database.
 */
export const API_KEY_PREFIX = 'atr_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
/** Display prefix: the first 8 chars after `atr_`. */
export const DISPLAY_PREFIX_LENGTH = 8;
const KEY_SHAPE = /^atr_[0-9A-Za-z]{38}$/;

export function toBase62(value: number, width: number): string {
  let remaining = value;
  let out = '';
  while (remaining > 0) {
    out = BASE62[remaining % 62] + out;
    remaining = Math.floor(remaining / 62);
  }
  return out.padStart(width, '0');
}

/** Base62 of the unsigned CRC32, left-padded to 6 chars (62^6 > 2^32, so it always fits). */
export function apiKeyChecksum(randomPart: string): string {
  return toBase62(crc32(Buffer.from(randomPart, 'utf8')) >>> 0, CHECKSUM_LENGTH);
}

export function generateApiKey(): { key: string; prefix: string } {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i += 1) random += BASE62[randomInt(62)];
  return { key: `${API_KEY_PREFIX}${random}${apiKeyChecksum(random)}`, prefix: random.slice(0, DISPLAY_PREFIX_LENGTH) };
}

/** True when the string has the key's shape and a matching checksum; pure, no I/O. */
export function isWellFormedApiKey(candidate: string): boolean {
  if (!KEY_SHAPE.test(candidate)) return false;
  const random = candidate.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + RANDOM_LENGTH);
  const given = candidate.slice(API_KEY_PREFIX.length + RANDOM_LENGTH);
  const expected = apiKeyChecksum(random);
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

/**
 * What is stored: HMAC-SHA256 with the server pepper. Keys carry 190 bits of entropy, so a fast keyed
 * hash is the right tool; a slow password hash would only cost latency on every call.
 */
export function hashApiKey(key: string, pepper: string): Buffer {
  return createHmac('sha256', pepper).update(key, 'utf8').digest();
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
