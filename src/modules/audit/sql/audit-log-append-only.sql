-- The audit log is append-only (docs/api.md, "Audit log"), enforced by the database itself: UPDATE and TRUNCATE
-- are always refused, DELETE of a row only when the deleting transaction named a retention cutoff
-- (`atrium.audit_prune_before`, set transaction-locally by audit-retention.service.ts) at least a day in the past
-- and the row is older than it.
--
-- A trigger, not revoked privileges: the service often connects as the owner or a superuser (trust auth, embedded
-- PGlite), to whom a REVOKE does not apply, while a trigger fires for everyone.
--
-- Loaded by migrations (src/database/sql-definitions.ts); a change here needs a new migration that loads it again.
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        cutoff timestamptz;
      BEGIN
        IF TG_OP = 'DELETE' THEN
          cutoff := nullif(current_setting('atrium.audit_prune_before', true), '')::timestamptz;
          IF cutoff IS NOT NULL AND cutoff <= now() - interval '1 day' AND OLD.created_at < cutoff THEN
            RETURN OLD;
          END IF;
          RAISE EXCEPTION 'audit_log is append-only: only entries older than the retention may be deleted'
            USING ERRCODE = 'insufficient_privilege';
        END IF;
        RAISE EXCEPTION 'audit_log is append-only: % is not allowed', TG_OP USING ERRCODE = 'insufficient_privilege';
      END
      $fn$;

DROP TRIGGER IF EXISTS audit_log_no_update ON audit_log;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
DROP TRIGGER IF EXISTS audit_log_delete_by_age ON audit_log;
CREATE TRIGGER audit_log_delete_by_age BEFORE DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
DROP TRIGGER IF EXISTS audit_log_no_truncate ON audit_log;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
