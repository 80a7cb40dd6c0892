import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QueryRunner } from 'typeorm';

/**
 * The database behaviour that stays in PostgreSQL (triggers for the agent-run event log and webhook outbox, the
 * append-only audit log, the task view function, the search statistics) is defined in `.sql` files beside the
 * feature it serves (`src/modules/<feature>/sql/<what-it-does>.sql`), so a reader of src/ finds it. Each file is
 * idempotent (CREATE OR REPLACE FUNCTION, DROP TRIGGER IF EXISTS + CREATE TRIGGER) and a migration loads it;
 * changing one means editing the file and adding a migration that loads it again.
 *
 * The files are read relative to src/: from the sources in tests, from dist/src/ when built (nest-cli.json copies
 * every `.sql` under src/ there, the Docker image included).
 */
const SRC_ROOT = join(__dirname, '..');

/** The text of a definition file, by its path under src/ (e.g. `modules/agent/sql/record-run-events.sql`). */
export function readSqlDefinition(pathUnderSrc: string): string {
  return readFileSync(join(SRC_ROOT, pathUnderSrc), 'utf8');
}

/** Executes each definition file in order (each file is one multi-statement simple query, in the migration's transaction). */
export async function applySqlDefinitions(queryRunner: QueryRunner, pathsUnderSrc: readonly string[]): Promise<void> {
  for (const path of pathsUnderSrc) await queryRunner.query(readSqlDefinition(path));
}
