import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log (API.md "Audit log (revision 2)"): append-only. The database itself refuses UPDATE and TRUNCATE
 * always, and DELETE of any row unless the deleting transaction named a retention cutoff (`atrium.audit_prune_before`,
 * set transaction-locally by the retention job) that lies at least a day in the past and the row is older than it.
 * A trigger, not revoked privileges: the service often connects as the owner or a superuser (trust auth, embedded
 * PGlite), to whom a REVOKE does not apply, while a trigger fires for everyone.
 *
 * Ids are UUIDv7 (their first 48 bits are `created_at` in ms), so they sort by time; lists page by (created_at, id).
 */
export class AuditLog1764310000000 implements MigrationInterface {
  name = 'AuditLog1764310000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE audit_log (
        id uuid PRIMARY KEY,
        created_at timestamptz(3) NOT NULL,
        action text NOT NULL,
        user_id uuid,
        via text NOT NULL CHECK (via IN ('user_token', 'api_key', 'oauth', 'project_token', 'agent_run')),
        credential_id uuid,
        client_name text,
        run_id uuid,
        target_type text,
        target_id text,
        outcome_status text NOT NULL CHECK (outcome_status IN ('ok', 'error')),
        outcome_code text,
        details jsonb NOT NULL DEFAULT '{}'::jsonb
      )`);
    await queryRunner.query(`CREATE INDEX audit_log_created_idx ON audit_log (created_at DESC, id DESC)`);
    await queryRunner.query(`CREATE INDEX audit_log_user_created_idx ON audit_log (user_id, created_at DESC, id DESC)`);
    await queryRunner.query(
      `CREATE INDEX audit_log_credential_created_idx ON audit_log (credential_id, created_at DESC, id DESC) WHERE credential_id IS NOT NULL`,
    );
    await queryRunner.query(`
      CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
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
      $fn$`);
    await queryRunner.query(
      `CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER audit_log_delete_by_age BEFORE DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE audit_log`);
    await queryRunner.query(`DROP FUNCTION audit_log_append_only()`);
  }
}
