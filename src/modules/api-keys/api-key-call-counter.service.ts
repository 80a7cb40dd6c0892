import { Injectable } from '@nestjs/common';
import type { ToolCredentialKind } from './tool-caller.js';
import { ToolCredentialsRepository, type ToolCredentialAuthorisation } from './tool-credentials.repository.js';

/** credential kind → (id → its authorisation as the counting statement read it; absent: not usable) */
type Counted = Map<ToolCredentialKind, Map<string, ToolCredentialAuthorisation>>;

interface Batch {
  /** credential kind → (id → calls to add) */
  counts: Map<ToolCredentialKind, Map<string, number>>;
  done: Promise<Counted>;
  settle: (error?: unknown, counted?: Counted) => void;
}

/**
 * Exact per-credential call counts (API keys and OAuth grants alike), committed before the call is answered, written by group commit: while one
 * UPDATE is in flight, the calls that arrive wait together and are written by the next single UPDATE
 * (one row per key, `call_count + n`). An idle server writes one call per statement, as a plain UPDATE
 * would; under load many calls share one. Why: one UPDATE per call made PostgreSQL rewrite a hot `api_keys`
 * row for every call, a large share of the gateway's throughput (docs/perf/gateway.md).
 *
 * Nothing is held back in memory past an answer: `count()` resolves only once its batch is committed, so
 * a kill -9 of this process loses no acknowledged call, and every instance sees the count at once.
 *
 * Only a credential that is not revoked and not expired at that moment is counted, and `count()` resolves
 * with its authorisation as the row holds it then (undefined: refuse the call). So the statement every call
 * needs anyway also re-checks revocation, expiry, scopes and pins against the database on every call.
 *
 * The statement commits asynchronously (`synchronous_commit` off for its own transaction only): waiting
 * for the WAL flush put disk fsync stalls into every tool call. A crash of PostgreSQL
 * itself can therefore lose the counts of its last fraction of a second; every other write still waits.
 * Rows are locked in id order, so two instances flushing overlapping keys cannot deadlock.
 */
@Injectable()
export class ApiKeyCallCounterService {
  private pending: Batch | null = null;
  private writing = false;

  constructor(private readonly credentials: ToolCredentialsRepository) {}

  /**
   * Adds one call to the credential's count; resolves once that is committed with the credential's current
   * authorisation, or with undefined (nothing counted) when it is revoked, expired or gone; rejects if the
   * count could not be written.
   */
  async count(kind: ToolCredentialKind, id: string): Promise<ToolCredentialAuthorisation | undefined> {
    const batch = (this.pending ??= newBatch());
    let counts = batch.counts.get(kind);
    if (!counts) batch.counts.set(kind, (counts = new Map()));
    counts.set(id, (counts.get(id) ?? 0) + 1);
    if (!this.writing) void this.writeNext();
    return (await batch.done).get(kind)?.get(id);
  }

  private async writeNext(): Promise<void> {
    this.writing = true;
    // Let the calls already in this turn of the event loop join the batch.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.pending) {
      const batch = this.pending;
      this.pending = null;
      try {
        const counted: Counted = new Map();
        for (const [kind, counts] of batch.counts) {
          const usable = await this.credentials.addCalls(kind, [...counts.keys()], [...counts.values()]);
          counted.set(kind, new Map(usable.map((authorisation) => [authorisation.id, authorisation])));
        }
        batch.settle(undefined, counted);
      } catch (error) {
        batch.settle(error);
      }
    }
    this.writing = false;
  }
}

function newBatch(): Batch {
  let settle!: Batch['settle'];
  const done = new Promise<Counted>((resolve, reject) => {
    settle = (error, counted) => (error === undefined ? resolve(counted ?? new Map()) : reject(error));
  });
  // A batch nobody awaits any more (its callers gone) must not surface as an unhandled rejection.
  done.catch(() => undefined);
  return { counts: new Map(), done, settle };
}
