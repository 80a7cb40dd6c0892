import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;

// A quarter of OWASP's scrypt floor (N=2^17, r=8, p=1) keeps a login's hash quick on a small machine while staying
// memory-hard. Parameters are stored per hash so they can rise.
const DEFAULT_PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;

/** Memory-hard password hashing (scrypt), format `scrypt$N$r$p$salt$hash`. Only for passwords, never for API keys. */
export const PasswordHasher = {
  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const { N, r, p } = DEFAULT_PARAMS;
    const derived = await scrypt(password, salt, KEY_LENGTH, { N, r, p, maxmem: 256 * N * r });
    return ['scrypt', N, r, p, salt.toString('base64'), derived.toString('base64')].join('$');
  },

  async verify(password: string, stored: string): Promise<boolean> {
    const [scheme, n, r, p, salt, hash] = stored.split('$');
    if (scheme !== 'scrypt' || !salt || !hash) return false;
    const N = Number(n);
    const expected = Buffer.from(hash, 'base64');
    const derived = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
      N,
      r: Number(r),
      p: Number(p),
      maxmem: 256 * N * Number(r),
    });
    return derived.length === expected.length && timingSafeEqual(derived, expected);
  },
};
