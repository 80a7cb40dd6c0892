/**
 * The UUID shape every id in Atrium has. Ids from paths and arguments are checked against it before
 * they reach PostgreSQL, where a malformed uuid would be an error (and a 500) instead of "not found".
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}
