import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applySqlDefinitions } from '../src/database/sql-definitions.js';

/**
 * The agent-run event log and webhook outbox triggers, the audit log's append-only trigger and the task view
 * function are now defined in `.sql` files under src/ (src/database/sql-definitions.ts). This re-creates them from
 * those files; the definitions are the ones earlier migrations wrote, so nothing changes in the database.
 */
const DEFINITIONS = [
  'modules/agent/sql/record-run-events.sql',
  'modules/agent/sql/record-webhook-deliveries.sql',
  'modules/audit/sql/audit-log-append-only.sql',
  'modules/tasks/sql/task-view-json.sql',
] as const;

export class SqlDefinitionsInSrc1795827176749 implements MigrationInterface {
  name = 'SqlDefinitionsInSrc1795827176749';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applySqlDefinitions(queryRunner, DEFINITIONS);
  }

  // The definitions before this migration were the same: nothing to undo.
  async down(): Promise<void> {}
}
