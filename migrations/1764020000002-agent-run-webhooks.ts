import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run webhooks (API.md, "Agent runs: approvals, streams and webhooks"). The secret is stored encrypted
 * (AES-GCM bound to the run id): signing needs it, so it cannot be a hash. A trigger creates one delivery per
 * final state and per `awaiting_approval`, in the same transaction as the status change, so no writer can skip
 * it; the webhook dispatcher hands pending deliveries to the queue, which retries with backoff.
 */
export class AgentRunWebhooks1764020000002 implements MigrationInterface {
  name = 'AgentRunWebhooks1764020000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE agent_runs ADD COLUMN webhook_url text, ADD COLUMN webhook_secret text`);
    await queryRunner.query(`
      CREATE TABLE agent_run_webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        run_id uuid NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
        type varchar(40) NOT NULL,
        occurred_at timestamptz NOT NULL DEFAULT now(),
        status varchar(16) NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts int NOT NULL DEFAULT 0,
        last_status_code int,
        last_error text,
        enqueued_at timestamptz,
        delivered_at timestamptz
      )`);
    await queryRunner.query(
      `CREATE INDEX agent_run_webhook_deliveries_run_idx ON agent_run_webhook_deliveries (run_id, occurred_at)`,
    );
    await queryRunner.query(
      `CREATE INDEX agent_run_webhook_deliveries_todo_idx ON agent_run_webhook_deliveries (occurred_at) WHERE status = 'pending' AND enqueued_at IS NULL`,
    );
    await queryRunner.query(`
      CREATE FUNCTION agent_run_webhook_record() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NEW.webhook_url IS NOT NULL AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'awaiting_approval')
           AND (TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status) THEN
          INSERT INTO agent_run_webhook_deliveries (run_id, type) VALUES (NEW.id, 'agent_run.' || NEW.status);
        END IF;
        RETURN NULL;
      END
      $fn$`);
    await queryRunner.query(
      `CREATE TRIGGER agent_run_webhook_record AFTER INSERT OR UPDATE ON agent_runs FOR EACH ROW EXECUTE FUNCTION agent_run_webhook_record()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER agent_run_webhook_record ON agent_runs`);
    await queryRunner.query(`DROP FUNCTION agent_run_webhook_record()`);
    await queryRunner.query(`DROP TABLE agent_run_webhook_deliveries`);
    await queryRunner.query(`ALTER TABLE agent_runs DROP COLUMN webhook_secret, DROP COLUMN webhook_url`);
  }
}
