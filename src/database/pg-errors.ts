/** PostgreSQL SQLSTATE codes the services react to; everything else is an internal error. */
function sqlState(error: unknown): string | undefined {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } };
  const code = candidate?.driverError?.code ?? candidate?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Connection refused / reset / admin shutdown / cannot connect now: the database is unavailable. Looks
 * through `driverError`, `cause` and AggregateError's `errors` (a refused connect can arrive as either).
 */
export function isConnectionFailure(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 3) return false;
  const state = sqlState(error);
  if (state && (state.startsWith('08') || state === '57P01' || state === '57P03' || NETWORK_CODES.has(state)))
    return true;
  const message = error instanceof Error ? error.message : '';
  if (
    /ECONNREFUSED|ECONNRESET|Connection terminated|timeout exceeded when trying to connect|Connection ended unexpectedly/i.test(
      message,
    )
  )
    return true;
  const nested = error as { cause?: unknown; errors?: unknown; driverError?: unknown };
  if (Array.isArray(nested.errors) && nested.errors.some((e) => isConnectionFailure(e, depth + 1))) return true;
  return isConnectionFailure(nested.cause, depth + 1) || isConnectionFailure(nested.driverError, depth + 1);
}

/**
 * SQLSTATEs of a statement that failed for the moment, not for what it asked: canceled by statement_timeout
 * (57014) or lock_timeout (55P03), chosen as a deadlock victim (40P01), a serialization failure (40001), too many
 * connections (53300). Run again later, the same statement can succeed.
 */
const TRANSIENT_STATES = new Set(['57014', '55P03', '40P01', '40001', '53300']);

/** A failure worth retrying: the database unavailable, or a statement that failed for the moment (TRANSIENT_STATES). */
export function isTransientDatabaseFailure(error: unknown): boolean {
  const state = sqlState(error);
  return (state !== undefined && TRANSIENT_STATES.has(state)) || isConnectionFailure(error);
}
