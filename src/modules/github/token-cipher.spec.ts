import { randomBytes } from 'node:crypto';
import { TokenCipher } from './token-cipher.js';

const key = () => randomBytes(32).toString('base64');
const cipherWith = (encryptionKey: string) =>
  new TokenCipher({ secrets: { encryptionKey, jwtSecret: 'x', tokenPepper: 'y' } });

describe('TokenCipher', () => {
  const cipher = cipherWith(key());

  it('round-trips and never contains the plaintext', () => {
    const token = 'ghp_' + 'A'.repeat(36);
    const envelope = cipher.encrypt(token, 'row-1');
    expect(envelope).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(envelope).not.toContain(token);
    expect(envelope).not.toContain(Buffer.from(token).toString('base64'));
    expect(cipher.decrypt(envelope, 'row-1')).toBe(token);
  });

  it('uses a fresh IV each time', () => {
    expect(cipher.encrypt('same', 'row')).not.toBe(cipher.encrypt('same', 'row'));
  });

  it('refuses another row, another key and a tampered envelope', () => {
    const envelope = cipher.encrypt('secret-token', 'row-1');
    expect(() => cipher.decrypt(envelope, 'row-2')).toThrow();
    expect(() => cipherWith(key()).decrypt(envelope, 'row-1')).toThrow();
    const parts = envelope.split('.');
    const flipped = Buffer.from(parts[3], 'base64url');
    flipped[0] ^= 1;
    expect(() =>
      cipher.decrypt([parts[0], parts[1], parts[2], flipped.toString('base64url')].join('.'), 'row-1'),
    ).toThrow();
    expect(() => cipher.decrypt('v0.a.b.c', 'row-1')).toThrow();
  });

  it('rejects a key that is not 32 bytes', () => {
    expect(() => cipherWith(randomBytes(16).toString('base64'))).toThrow();
  });
});
