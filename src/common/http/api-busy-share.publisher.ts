import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ThrottledWarning } from '../logging/throttled-warning.js';
import { ApiBusySharesRepository } from './api-busy-shares.repository.js';
import { httpActivity } from './http-activity.js';

/** How often a serving process publishes its busy share: the share covers the last second, so each one is seen. */
const API_BUSY_SHARE_PUBLISH_MS = 1000;
/**
 * A report older than this is not read: its instance stopped publishing (it died, or its loop is blocked), so a
 * worker cannot tell how busy it is. A few publish periods, so one slow statement does not make every API unseen.
 */
export const API_BUSY_SHARE_FRESH_MS = 5000;
/** Longest a shutdown waits for this instance's row to be removed. */
const SHUTDOWN_REMOVE_MS = 1000;
/** Rows this old belong to instances that died without removing theirs; each start-up drops them. */
const DEAD_ROW_MS = 60_000;

/**
 * Publishes this process's HTTP busy share (HttpActivity) to `api_busy_shares` about once a second, so that
 * worker-only processes (APP_ROLE=worker) on the same database can pace large documents by the API's load
 * (SharedRequestLoad). Only in a process that serves HTTP on a shared PostgreSQL: on the embedded engine there is one
 * process by construction and no worker could read it, and a worker-only process has nothing to publish. A failing
 * statement never reaches a request: it is logged at most once a minute and the next tick tries again.
 */
@Injectable()
export class ApiBusySharePublisher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ApiBusySharePublisher.name);
  private readonly failures = new ThrottledWarning(this.logger, 'API busy share not published');
  private readonly instanceId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  /** The statement under way: a slow database skips ticks rather than piling statements up. */
  private inFlight: Promise<void> | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: ApiBusySharesRepository,
  ) {}

  /** True where some worker-only process can read what this one publishes. */
  get enabled(): boolean {
    return this.config.role !== 'worker' && Boolean(this.config.database.url);
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    this.run(() => this.repository.removeOlderThan(DEAD_ROW_MS));
    this.timer = setInterval(
      () => this.run(() => this.repository.report(this.instanceId, httpActivity.busyShare())),
      API_BUSY_SHARE_PUBLISH_MS,
    );
    this.timer.unref();
  }

  /** Before the pool closes: workers stop counting this instance at once rather than after its report goes stale. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    const removed = (this.inFlight ?? Promise.resolve())
      .then(() => this.repository.remove(this.instanceId))
      .catch((error: unknown) => this.failures.warn(error));
    // A database that does not answer must not hold the shutdown: the row then goes stale within seconds anyway.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([removed, new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_REMOVE_MS)))]);
    clearTimeout(timer);
  }

  private run(statement: () => Promise<void>): void {
    if (this.inFlight) return;
    this.inFlight = statement()
      .catch((error: unknown) => this.failures.warn(error))
      .finally(() => (this.inFlight = undefined));
  }
}
