import { Injectable } from '@nestjs/common';
import { sql, type QueryCreator, type Selectable } from 'kysely';
import { visibleAuditEntry } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import { pageOrder, type PageQuery } from '../../common/pagination/cursor-page.js';
import type { AuditLog, DB } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import type { AuditAction, AuditEntry, AuditVia } from './audit-entry.js';

/** What a list or an export may filter by (all optional). */
export interface AuditFilter {
  /** GET /api/audit: only what this actor may see (its own entries); unset on the admin routes. */
  visibleTo?: Actor;
  userId?: string;
  credentialId?: string;
  action?: AuditAction;
  from?: Date;
  to?: Date;
}

/** An entry as stored, with created_at kept as the pagination helpers expect. */
export type StoredAuditEntry = AuditEntry & { createdAt: Date };

/** The audit_log table: inserts (one statement per batch), filtered pages and the age-only prune. */
@Injectable()
export class AuditLogRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /**
   * One INSERT per batch, the columns as arrays (`unnest`): the same short statement text for any number of entries,
   * where a multi-row VALUES list had a dozen parameters per entry, thousands per flush under load, for Kysely to
   * build and PostgreSQL to parse, a stall of the event loop every flush. An OAuth
   * tool call's client name, when the MCP client did not name itself, is the OAuth client's name on its grant,
   * looked up inside the same statement (as toRow does for one entry).
   */
  async insert(entries: readonly AuditEntry[], executor: DbExecutor = this.db): Promise<void> {
    if (entries.length === 0) return;
    const column = <T>(value: (entry: AuditEntry) => T): T[] => entries.map(value);
    await sql`INSERT INTO audit_log (id, created_at, action, user_id, via, credential_id, client_name, client_version, run_id, target_type, target_id, outcome_status, outcome_code, details)
      SELECT u.id, u.created_at, u.action, u.user_id, u.via, u.credential_id,
             coalesce(u.client_name, (SELECT g.client_name FROM oauth_grants g WHERE u.via = 'oauth' AND g.id = u.credential_id)),
             u.client_version, u.run_id, u.target_type, u.target_id, u.outcome_status, u.outcome_code, u.details::jsonb
      FROM unnest(${column((e) => e.id)}::uuid[], ${column((e) => e.at.toISOString())}::timestamptz[], ${column((e) => e.action)}::text[],
                  ${column((e) => e.actor.userId)}::uuid[], ${column((e) => e.actor.via)}::text[], ${column((e) => e.actor.credentialId)}::uuid[],
                  ${column((e) => e.actor.clientName ?? null)}::text[], ${column((e) => e.actor.clientVersion ?? null)}::text[], ${column((e) => e.actor.runId ?? null)}::uuid[],
                  ${column((e) => e.target?.type ?? null)}::text[], ${column((e) => e.target?.id ?? null)}::text[],
                  ${column((e) => e.outcome.status)}::text[], ${column((e) => e.outcome.code ?? null)}::text[], ${column((e) => JSON.stringify(e.details))}::text[])
        AS u(id, created_at, action, user_id, via, credential_id, client_name, client_version, run_id, target_type, target_id, outcome_status, outcome_code, details)`.execute(
      executor,
    );
  }

  /**
   * `creator` with the entry's INSERT as a data-modifying CTE: the statement then built on it (e.g. a task's INSERT)
   * writes the entry too, atomically, in the same round trip. PostgreSQL runs a data-modifying CTE even when the main
   * statement does not read it.
   */
  withEntry(entry: AuditEntry, creator: QueryCreator<DB>): QueryCreator<DB> {
    return creator.with('audit_entry', (db) => db.insertInto('auditLog').values(toRow(entry)));
  }

  /** Newest first, `limit + 1` rows after the cursor. */
  async page(filter: AuditFilter, query: PageQuery): Promise<StoredAuditEntry[]> {
    let qb = this.db.selectFrom('auditLog as a').selectAll('a');
    if (filter.visibleTo !== undefined) qb = qb.where(visibleAuditEntry(filter.visibleTo, 'a'));
    if (filter.userId !== undefined) qb = qb.where('a.userId', '=', filter.userId);
    if (filter.credentialId !== undefined) qb = qb.where('a.credentialId', '=', filter.credentialId);
    if (filter.action !== undefined) qb = qb.where('a.action', '=', filter.action);
    if (filter.from !== undefined) qb = qb.where('a.createdAt', '>=', filter.from);
    if (filter.to !== undefined) qb = qb.where('a.createdAt', '<', filter.to);
    const rows = await pageOrder(qb, 'a', query).execute();
    return rows.map(toEntry);
  }

  /**
   * Deletes every entry older than `cutoff`, the only DELETE the table's trigger lets through: the cutoff is
   * named to the trigger transaction-locally, and the trigger refuses one less than a day old.
   */
  async pruneOlderThan(cutoff: Date): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      await sql`SELECT set_config('atrium.audit_prune_before', ${cutoff.toISOString()}, true)`.execute(trx);
      const result = await trx.deleteFrom('auditLog').where('createdAt', '<', cutoff).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

/**
 * An entry as a row. An OAuth tool call's client name, when the MCP client did not name itself, is the OAuth client's
 * name on its grant, looked up inside the same statement (no extra round trip on the call path).
 */
function toRow(entry: AuditEntry) {
  return {
    id: entry.id,
    createdAt: entry.at,
    action: entry.action,
    userId: entry.actor.userId,
    via: entry.actor.via,
    credentialId: entry.actor.credentialId,
    clientName:
      entry.actor.clientName ??
      (entry.actor.via === 'oauth' && entry.actor.credentialId
        ? sql<string | null>`(SELECT g.client_name FROM oauth_grants g WHERE g.id = ${entry.actor.credentialId}::uuid)`
        : null),
    clientVersion: entry.actor.clientVersion ?? null,
    runId: entry.actor.runId ?? null,
    targetType: entry.target?.type ?? null,
    targetId: entry.target?.id ?? null,
    outcomeStatus: entry.outcome.status,
    outcomeCode: entry.outcome.code ?? null,
    details: JSON.stringify(entry.details),
  };
}

function toEntry(row: Selectable<AuditLog>): StoredAuditEntry {
  const createdAt = row.createdAt;
  return {
    id: row.id,
    at: createdAt,
    createdAt,
    action: row.action as AuditAction,
    actor: {
      userId: row.userId,
      via: row.via as AuditVia,
      credentialId: row.credentialId,
      ...(row.clientName !== null ? { clientName: row.clientName } : {}),
      ...(row.clientVersion !== null ? { clientVersion: row.clientVersion } : {}),
      ...(row.runId !== null ? { runId: row.runId } : {}),
    },
    target: row.targetType !== null && row.targetId !== null ? { type: row.targetType, id: row.targetId } : null,
    outcome: {
      status: row.outcomeStatus as 'ok' | 'error',
      ...(row.outcomeCode !== null ? { code: row.outcomeCode } : {}),
    },
    details: row.details as Record<string, unknown>,
  };
}
