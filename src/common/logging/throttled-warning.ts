import type { Logger } from '@nestjs/common';

/**
 * A warning for a failure that repeats every second while it lasts (a background statement against a database that
 * is down): logged at most once per `everyMs`, with how many were left unlogged since, so an outage is one line a minute.
 */
export class ThrottledWarning {
  private loggedAt = -Infinity;
  private unlogged = 0;

  constructor(
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly msg: string,
    private readonly everyMs = 60_000,
  ) {}

  warn(error: unknown, now = performance.now()): void {
    if (now - this.loggedAt < this.everyMs) {
      this.unlogged += 1;
      return;
    }
    this.logger.warn({
      msg: this.msg,
      error: error instanceof Error ? error.message : String(error),
      ...(this.unlogged > 0 ? { notLoggedSince: this.unlogged } : {}),
    });
    this.loggedAt = now;
    this.unlogged = 0;
  }
}
