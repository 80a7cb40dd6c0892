import {
  apiKeyChecksum,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  sameHash,
  toBase62,
} from './api-key-format.js';

describe('API key format', () => {
  it('generates atr_ + 32 base62 + 6-char checksum with an 8-char display prefix', () => {
    const { key, prefix } = generateApiKey();
    expect(key).toMatch(/^atr_[0-9A-Za-z]{38}$/);
    expect(prefix).toBe(key.slice(4, 12));
    expect(key.slice(36)).toBe(apiKeyChecksum(key.slice(4, 36)));
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('generates distinct keys', () => {
    const keys = new Set(Array.from({ length: 500 }, () => generateApiKey().key));
    expect(keys.size).toBe(500);
  });

  it('rejects a key with one character changed (typo) or a bad checksum', () => {
    const { key } = generateApiKey();
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    expect(isWellFormedApiKey(flipped)).toBe(false);
    const badSum = key.slice(0, -1) + (key.endsWith('0') ? '1' : '0');
    expect(isWellFormedApiKey(badSum)).toBe(false);
  });

  it.each(['', 'atr_', 'atr_short', `atp_${'a'.repeat(38)}`, `atr_${'a'.repeat(37)}!`, `atr_${'a'.repeat(39)}`])(
    'rejects malformed %p',
    (candidate) => expect(isWellFormedApiKey(candidate)).toBe(false),
  );

  it('computes a known CRC32 in base62, zero-padded to 6', () => {
    // crc32("123456789") = 0xCBF43926 = 3421780262
    expect(apiKeyChecksum('123456789')).toBe(toBase62(3421780262, 6));
    expect(toBase62(0, 6)).toBe('000000');
    expect(toBase62(61, 6)).toBe('00000z');
    expect(toBase62(62, 6)).toBe('000010');
    expect(toBase62(0xffffffff, 6)).toHaveLength(6);
  });

  it('hashes with the pepper: same key + pepper → same hash, other pepper → other hash', () => {
    const { key } = generateApiKey();
    const a = hashApiKey(key, 'pepper-one-xxxxxxxxxxxxxxxxxxxxxxxxxxxx');
    expect(sameHash(a, hashApiKey(key, 'pepper-one-xxxxxxxxxxxxxxxxxxxxxxxxxxxx'))).toBe(true);
    expect(sameHash(a, hashApiKey(key, 'pepper-two-xxxxxxxxxxxxxxxxxxxxxxxxxxxx'))).toBe(false);
    expect(a).toHaveLength(32);
  });
});
