import type { Logger } from '@nestjs/common';

/**
 * Job rows whose worker died are taken over by a sweep: once at start-up, then every `intervalMs`.
 * A failed sweep is logged and retried on the next tick. Returns the function that stops it.
 */
export async function startRecoverySweep(what: string, recover: () => Promise<unknown>, intervalMs: number, logger: Logger): Promise<() => void> {
  const sweep = (level: 'error' | 'warn') =>
    recover().catch((error: unknown) => logger[level]({ msg: `${what} recovery failed`, error: String(error) }));
  await sweep('error');
  const timer = setInterval(() => void sweep('warn'), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
