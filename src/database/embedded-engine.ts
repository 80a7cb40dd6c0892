/**
 * Asks the server whether it is the embedded engine (PGlite behind its wire server), whose connections all share
 * one session: per-connection state (named statements, a pool of its own) gains nothing there or breaks. Asked of
 * the server because the URL cannot tell (tests and the embedded default both use a loopback address).
 */
export const EMBEDDED_ENGINE_QUERY = `SELECT position('PGlite' in version()) > 0 AS embedded`;

export interface EmbeddedEngineRow {
  embedded: boolean;
}
