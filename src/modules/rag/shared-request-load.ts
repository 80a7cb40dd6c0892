import { Logger } from '@nestjs/common';
import { API_BUSY_SHARE_FRESH_MS } from '../../common/http/api-busy-share.publisher.js';
import type { ApiBusySharesRepository } from '../../common/http/api-busy-shares.repository.js';
import { ThrottledWarning } from '../../common/logging/throttled-warning.js';
import type { RequestLoad } from './indexing-pacer.js';

/** A read is reused this long: every batch of every document asks, the database is asked at most once per period. */
const READ_EVERY_MS = 1000;
/** A read older than this (the database slow or down since) is not trusted: the pacer paces. */
const TRUSTED_FOR_MS = 3000;

/**
 * The API's load as a worker-only process (APP_ROLE=worker) sees it: the highest busy share the API instances
 * published lately (ApiBusySharePublisher). The pacer asks synchronously between batches, so it gets the last read
 * while a new one runs in the background when that one is older than a second. It cannot see (`serving` false, so
 * the pacer paces) while no API instance reported within a few seconds, before the first read, when the last read
 * failed (logged at most once a minute) or when it is too old to trust.
 */
export class SharedRequestLoad implements RequestLoad {
  private readonly failures = new ThrottledWarning(new Logger(SharedRequestLoad.name), 'API busy share not read');
  private share: number | null = null;
  private readAt = -Infinity;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly repository: Pick<ApiBusySharesRepository, 'highestFresh'>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get serving(): boolean {
    this.refreshIfOld();
    return this.share !== null && this.now() - this.readAt < TRUSTED_FOR_MS;
  }

  busyShare(): number {
    this.refreshIfOld();
    return this.share ?? 1;
  }

  /** Reads the highest fresh share now (one read at a time); never rejects. */
  refresh(): Promise<void> {
    this.reading ??= this.repository
      .highestFresh(API_BUSY_SHARE_FRESH_MS)
      .then(
        (share) => {
          this.share = share;
          this.readAt = this.now();
        },
        (error: unknown) => {
          // Asked again a period later, not at every batch meanwhile.
          this.share = null;
          this.readAt = this.now();
          this.failures.warn(error);
        },
      )
      .finally(() => (this.reading = undefined));
    return this.reading;
  }

  private refreshIfOld(): void {
    if (this.now() - this.readAt >= READ_EVERY_MS) void this.refresh();
  }
}
