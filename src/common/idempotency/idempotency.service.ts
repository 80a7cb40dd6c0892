import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';
import { canonicalJson } from './canonical-json.js';
import { IdempotencyRepository } from './idempotency.repository.js';

export interface IdempotencyRequest {
  /** Whose key space: the user (or key owner) on whose behalf the request runs. */
  ownerId: string;
  /** Which operation family, e.g. `tool-api:call`, `agent:execute`; keys never collide across scopes. */
  scope: string;
  /** The client's Idempotency-Key header value. */
  key: string;
  /** What identifies "the same request" (normalised arguments, route params). Only its hash is stored. */
  request: unknown;
}

export interface IdempotentOutcome<T> {
  value: T;
  /** True when `value` is the stored answer of an earlier request. */
  replayed: boolean;
}

/**
 * A write request with an optional Idempotency-Key, whose checks run before any replay (API.md:
 * "Authorization before replay"): a caller who may not make the request gets the same 401/403/404 with or
 * without the key, never the stored answer of somebody who could.
 */
export interface AuthorizedRequest<P, T> extends Omit<IdempotencyRequest, 'key'> {
  /** The Idempotency-Key header; undefined = no idempotency, the request just runs. */
  key: string | undefined;
  /** Every check the request needs (role, visibility of what it names); its result is what `work` acts on. */
  authorize: () => Promise<P>;
  work: (authorized: P) => Promise<T>;
}

const TTL_HOURS = 24;
/**
 * How long a claim on a key lasts while its request runs. A process that dies mid-request leaves its
 * record `pending`; after this lease a retry takes the key over and runs the request, instead of being
 * told "in progress" for the whole 24 h. Far longer than any request here takes (uploads, GitHub calls
 * with their timeouts and retries), so a live request is never run a second time.
 */
const PENDING_LEASE_MINUTES = 10;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const WAIT_FOR_IN_FLIGHT_MS = 5000;

/**
 * Idempotency-Key support for any write route (Area A write tools; Area B execute/ingest/upload).
 * A record per (owner, scope, key) holds a hash of the request and, once done, the response. A repeat
 * with the same request within 24 h gets the stored response; other arguments get 409
 * idempotency_conflict. A failed first attempt leaves no record, so the client may retry; one whose
 * process died leaves a claim that lapses after PENDING_LEASE_MINUTES.
 */
@Injectable()
export class IdempotencyService {
  constructor(private readonly records: IdempotencyRepository) {}

  /** 400 for a header value that cannot be a key (empty, too long, control or non-ASCII chars). */
  static assertValidKey(key: string): void {
    if (!KEY_PATTERN.test(key)) {
      throw new AppException(ErrorCode.InvalidRequest, 'Idempotency-Key must be 1..255 visible ASCII characters', {
        header: 'Idempotency-Key',
      });
    }
  }

  /** The one way a route runs an idempotent write: checks first, then the key's replay or the work. */
  async runAuthorized<P, T>(input: AuthorizedRequest<P, T>): Promise<IdempotentOutcome<T>> {
    const authorized = await input.authorize();
    if (input.key === undefined) return { value: await input.work(authorized), replayed: false };
    return this.run({ ownerId: input.ownerId, scope: input.scope, key: input.key, request: input.request }, () =>
      input.work(authorized),
    );
  }

  async run<T>(input: IdempotencyRequest, work: () => Promise<T>): Promise<IdempotentOutcome<T>> {
    IdempotencyService.assertValidKey(input.key);
    const requestHash = createHash('sha256').update(canonicalJson(input.request)).digest('hex');
    const id = { ownerId: input.ownerId, scope: input.scope, key: input.key };
    const deadline = Date.now() + WAIT_FOR_IN_FLIGHT_MS;
    while (!(await this.records.claim(id, requestHash, PENDING_LEASE_MINUTES))) {
      const existing = await this.records.findLive(id);
      if (!existing) continue; // expired or released between the two statements: claim again
      if (existing.requestHash !== requestHash) {
        throw new AppException(
          ErrorCode.IdempotencyConflict,
          'This Idempotency-Key was already used with different arguments',
          {
            header: 'Idempotency-Key',
          },
        );
      }
      if (existing.state === 'completed' && existing.response)
        return { value: existing.response.value as T, replayed: true };
      if (Date.now() > deadline) {
        throw new AppException(
          ErrorCode.IdempotencyConflict,
          'A request with this Idempotency-Key is still in progress; retry shortly',
          {
            header: 'Idempotency-Key',
            in_progress: true,
          },
        );
      }
      await sleep(50);
    }

    let value: T;
    try {
      value = await work();
    } catch (error) {
      await this.records.release(id, requestHash);
      throw error;
    }
    await this.records.complete(id, requestHash, value, TTL_HOURS);
    if (Math.random() < 0.01) void this.purgeExpired().catch(() => undefined);
    return { value, replayed: false };
  }

  /** Expired records are dead weight; dropped now and then. */
  async purgeExpired(): Promise<void> {
    await this.records.deleteExpired(1);
  }
}
