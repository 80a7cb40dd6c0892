import { CompiledQuery, type DatabaseConnection } from 'kysely';
import { VECTOR_CANDIDATES } from './rag.constants.js';

// Apart from RagSearchRepository: the database layer's Kysely client runs this on every new connection, and
// must not import the repository (which injects that client).

/** The HNSW candidate-list size every pooled session starts with: what a vector list of VECTOR_CANDIDATES wants. */
export const SESSION_EF_SEARCH = VECTOR_CANDIDATES;

/** False once a connection could not take the search session settings: then every list sets its own again. */
let sessionSettingsHold = true;

export function searchSessionSettingsHold(): boolean {
  return sessionSettingsHold;
}

/**
 * Run once on each new connection of the shared pool (Kysely's `onCreateConnection`, kysely.provider.ts): the
 * HNSW settings vector search wants, as session settings, so that a vector list is its one statement instead of
 * `BEGIN; SET LOCAL …`, the statement and `COMMIT` (three round trips). Only what the installed pgvector knows
 * (`hnsw.ef_search` since 0.5, `hnsw.iterative_scan` since 0.8); every connection gets the same values, and they
 * only change HNSW index scans, which only search runs. And `jit` off: the keyword list's cost estimate sits just
 * under PostgreSQL's `jit_above_cost`, and on a database whose statistics are not yet gathered it crossed it,
 * adding a JIT compilation many times the search's own time (docs/perf/rag.md); none
 * of Atrium's statements runs long enough for compiled expressions to pay that back. Before pgvector's library is loaded in a session the
 * values wait as placeholders, which the library takes over when it loads. Never throws: a connection that
 * fails here turns the session settings off for the process (RagSearchRepository.withSettings then sets them
 * per list, as before) instead of leaking the pooled connection Kysely is handing out.
 */
export async function applySearchSessionSettings(connection: DatabaseConnection): Promise<void> {
  try {
    await connection.executeQuery(
      CompiledQuery.raw(
        `SELECT set_config('jit', 'off', false)
         UNION ALL
         SELECT set_config(s.name, s.value, false)
         FROM (VALUES ('hnsw.ef_search', '${SESSION_EF_SEARCH}', '{0,5}'), ('hnsw.iterative_scan', 'relaxed_order', '{0,8}')) s(name, value, since)
         JOIN pg_extension e ON e.extname = 'vector' AND (regexp_match(e.extversion, '^([0-9]+)[.]([0-9]+)'))::int[] >= s.since::int[]`,
      ),
    );
  } catch {
    sessionSettingsHold = false;
  }
}
