/**
 * ioredis failures that mean "Redis is unreachable right now" (as opposed to a bad command): the
 * per-request retry limit ran out while reconnecting, or the connection closed under the command.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  return /^Connection is closed\.?$|Stream isn't writeable|enableOfflineQueue options is false/.test(error.message);
}
