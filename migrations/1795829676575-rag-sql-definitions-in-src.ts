import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applySqlDefinitions } from '../src/database/sql-definitions.js';

/**
 * The search statistics (statistic scopes, their ids, and the triggers that keep each scope's BM25 statistics
 * exact) are now defined in `.sql` files under src/modules/rag/sql/ (src/database/sql-definitions.ts). This
 * re-creates them from those files; the definitions are the ones earlier migrations wrote.
 */
const DEFINITIONS = [
  'modules/rag/sql/statistic-scopes.sql',
  'modules/rag/sql/scope-statistics.sql',
  'modules/rag/sql/drop-postings-of-deleted-chunks.sql',
] as const;

export class RagSqlDefinitionsInSrc1795829676575 implements MigrationInterface {
  name = 'RagSqlDefinitionsInSrc1795829676575';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applySqlDefinitions(queryRunner, DEFINITIONS);
  }

  // The definitions before this migration were the same: nothing to undo.
  async down(): Promise<void> {}
}
