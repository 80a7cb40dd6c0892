/**
 * Polling for tests: work that finishes in the background (queued runs, indexing, webhooks, recovery after an
 * outage) is awaited by asking again until it is there, never by a fixed sleep. A timeout fails with what was
 * awaited and the last thing seen, so a red test says which state was missing instead of "timed out".
 */

export interface WaitOptions {
  /** Give up after this long (default 30 s; a hung poll should fail the test, not the Jest timeout). */
  timeoutMs?: number;
  /** Pause between two reads (default 100 ms). */
  intervalMs?: number;
  /**
   * A read that throws counts as "not yet" instead of failing at once (e.g. a server still restarting).
   * The last error is part of the timeout message.
   */
  ignoreErrors?: boolean;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Thrown when a poll runs out of time; `last` is the last value read (or the last error). */
export class WaitTimeoutError extends Error {
  constructor(
    label: string,
    timeoutMs: number,
    readonly last: unknown,
  ) {
    super(`${label}: not reached within ${timeoutMs} ms; last seen: ${describe(last)}`);
    this.name = 'WaitTimeoutError';
  }
}

/**
 * Reads `read()` until `accept(value)` holds and returns that value. The read runs at least once, even when
 * `timeoutMs` has already passed by then (a slow first read is not a failure).
 */
export async function pollUntil<T>(
  label: string,
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  options: WaitOptions = {},
): Promise<T> {
  const { timeoutMs = 30_000, intervalMs = 100, ignoreErrors = false } = options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await read();
      if (accept(value)) return value;
      last = value;
    } catch (error) {
      if (!ignoreErrors) throw error;
      last = error;
    }
    if (Date.now() >= deadline) throw new WaitTimeoutError(label, timeoutMs, last);
    await sleep(intervalMs);
  }
}

/** Calls `probe()` until it returns something truthy, and returns that. */
export async function waitFor<T>(
  label: string,
  probe: () => Promise<T | undefined | null | false>,
  options: WaitOptions = {},
): Promise<T> {
  return (await pollUntil(label, probe, (value) => Boolean(value), options)) as T;
}

/** How long `check()` took to turn true (e.g. recovery after an outage), in ms. */
export async function timeUntil(
  label: string,
  check: () => Promise<boolean>,
  options: WaitOptions = {},
): Promise<number> {
  const started = Date.now();
  await pollUntil(label, check, (ok) => ok, options);
  return Date.now() - started;
}

function describe(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} chars)` : text;
}
