-- The webhook outbox of agent runs (docs/api.md, "Agent runs: approvals, streams and webhooks").
--
-- A trigger creates one pending delivery per final state and per `awaiting_approval` of a run that has a webhook,
-- in the same transaction as the status change, so no writer of a run can skip it; the webhook dispatcher
-- (webhooks/) hands pending deliveries to the queue, which retries with backoff.
--
-- Loaded by migrations (src/database/sql-definitions.ts); a change here needs a new migration that loads it again.
CREATE OR REPLACE FUNCTION agent_run_webhook_record() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NEW.webhook_url IS NOT NULL AND NEW.status IN ('succeeded', 'failed', 'cancelled', 'awaiting_approval')
           AND (TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status) THEN
          INSERT INTO agent_run_webhook_deliveries (run_id, type) VALUES (NEW.id, 'agent_run.' || NEW.status);
        END IF;
        RETURN NULL;
      END
      $fn$;

DROP TRIGGER IF EXISTS agent_run_webhook_record ON agent_runs;
CREATE TRIGGER agent_run_webhook_record AFTER INSERT OR UPDATE ON agent_runs
  FOR EACH ROW EXECUTE FUNCTION agent_run_webhook_record();
