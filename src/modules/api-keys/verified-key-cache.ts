import { Injectable } from '@nestjs/common';

/** Enough for every key active on a busy instance; an entry is two short strings (~200 bytes). */
const MAX_ENTRIES = 20_000;

/**
 * Which key id an API key's HMAC belongs to, for keys this process has verified: it spares a call with a
 * known key the lookup by hash. It holds nothing that can change (a key's hash and id never do; a deleted
 * key's id simply stops matching a row), so it needs no invalidation: what can change — revocation, expiry,
 * scopes, pins — is read from the row on every call by the statement that counts the call
 * (ToolCredentialsRepository.addCalls), and a call whose key is no longer usable is refused there, on every
 * instance at once. Bounded by dropping the oldest entry (insertion order); a dropped key costs one lookup.
 * Hand-written rather than lru-cache: a dozen lines with no expiry or recency to manage.
 */
@Injectable()
export class VerifiedKeyCache {
  private readonly ids = new Map<string, string>();

  /** The key id of a hash verified before, or undefined. */
  idOf(keyHash: Buffer): string | undefined {
    return this.ids.get(keyHash.toString('base64'));
  }

  remember(keyHash: Buffer, keyId: string): void {
    const entry = keyHash.toString('base64');
    if (this.ids.size >= MAX_ENTRIES && !this.ids.has(entry)) this.ids.delete(this.ids.keys().next().value!);
    this.ids.set(entry, keyId);
  }

  forget(keyHash: Buffer): void {
    this.ids.delete(keyHash.toString('base64'));
  }
}
