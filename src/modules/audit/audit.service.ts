import { Injectable } from '@nestjs/common';
import type { QueryCreator } from 'kysely';
import type { DB } from '../../database/database.types.js';
import { toAppException } from '../../common/errors/to-app-exception.js';
import { toPage, type Page, type PageQuery } from '../../common/pagination/cursor-page.js';
import type { DbExecutor } from '../../database/kysely.provider.js';
import { callerOf } from '../../common/auth/caller.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import { CredentialEvents } from '../credentials/credential-events.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { explicitAuditActor, pendingToolCallStorage } from './audit-context.js';
import {
  auditActorOf,
  newAuditEntry,
  toAuditView,
  type AuditAction,
  type AuditActor,
  type AuditEntry,
  type AuditEntryView,
  type AuditTarget,
} from './audit-entry.js';
import { AuditLogRepository, type AuditFilter } from './audit-log.repository.js';
import { AuditRecorder } from './audit.recorder.js';

/** A change a service makes, described for its entry. */
export interface AuditedChange {
  action: AuditAction;
  target: AuditTarget | null;
  details?: Record<string, unknown>;
  /** Who acted, when it is not the credential of the current request (e.g. the OAuth client exchanging a code). */
  actor?: AuditActor;
  /**
   * The user the service acts for: named (as a user token, the credential unknown) only when neither a request nor
   * runAsAuditActor says who acts, e.g. a service called in-process; the change is then still never unrecorded.
   */
  onBehalfOf?: string;
}

/** Keyset pages of this size feed the export: memory stays one page, whatever the log holds. */
const EXPORT_PAGE = 1000;

/**
 * Writes and reads the audit log. A change's entry goes into the change's own transaction (recordChange), so there
 * is no change without its entry and no entry without its change; inside a tool call that entry is the call's
 * tool.call entry. What changed nothing is written behind in batches (AuditRecorder).
 */
@Injectable()
export class AuditService {
  constructor(
    private readonly repository: AuditLogRepository,
    private readonly recorder: AuditRecorder,
    credentialEvents: CredentialEvents,
  ) {
    // A refused sign-in changed nothing, so written behind; never the password.
    credentialEvents.onSignInRefused(({ userId, via, email, ip }) =>
      this.recordBehind(
        newAuditEntry({
          action: 'auth.login_failed',
          actor: { userId, via: via as AuditActor['via'], credentialId: null },
          target: userId ? { type: 'user', id: userId } : null,
          outcome: { status: 'error', code: ErrorCode.AuthInvalid },
          details: { email: email.slice(0, 320), ip },
        }),
      ),
    );
  }

  /**
   * The actor named by runAsAuditActor, else the caller the guard of the current HTTP request authenticated
   * (attachCaller); undefined outside both.
   */
  actorOfRequest(): AuditActor | undefined {
    const explicit = explicitAuditActor();
    if (explicit) return explicit;
    const request = RequestContext.request();
    const caller = request ? callerOf(request) : undefined;
    return caller ? auditActorOf(caller) : undefined;
  }

  /**
   * In the transaction of the change: its entry. Inside a tool call, the call's tool.call entry instead (once per
   * call, whatever the tool changes), with the change's target.
   */
  async recordChange(executor: DbExecutor, change: AuditedChange): Promise<void> {
    const pending = pendingToolCallStorage.getStore();
    if (pending) {
      if (pending.written) return;
      pending.written = true;
      await this.repository.insert([{ ...pending.entry, target: change.target ?? pending.entry.target }], executor);
      return;
    }
    const actor =
      change.actor ??
      this.actorOfRequest() ??
      (change.onBehalfOf !== undefined
        ? { userId: change.onBehalfOf, via: 'user_token' as const, credentialId: null }
        : undefined);
    // Fail closed: a change nobody can be named for is a bug, and must not happen unrecorded.
    if (!actor) throw new Error(`No actor known for the audit entry of ${change.action}`);
    const { action, target, details = {} } = change;
    await this.repository.insert(
      [newAuditEntry({ action, actor, target, outcome: { status: 'ok' }, details })],
      executor,
    );
  }

  /**
   * In the transaction of a change that only tools make (tasks): the pending tool.call entry, with the change's
   * target. Outside a tool call there is nothing to record.
   */
  async recordToolChange(executor: DbExecutor, target: AuditTarget): Promise<void> {
    const pending = pendingToolCallStorage.getStore();
    if (!pending || pending.written) return;
    pending.written = true;
    await this.repository.insert([{ ...pending.entry, target }], executor);
  }

  /**
   * For a change that only tools make and that is one statement (a task's INSERT): `creator` with the pending
   * tool.call entry (with this target) joined to that statement as a CTE, so the entry costs no extra round trip and
   * no transaction. Outside a tool call, `creator` as it is.
   */
  withToolChange(target: AuditTarget, creator: QueryCreator<DB>): QueryCreator<DB> {
    const pending = pendingToolCallStorage.getStore();
    if (!pending || pending.written) return creator;
    pending.written = true;
    return this.repository.withEntry({ ...pending.entry, target }, creator);
  }

  /** An entry of something that changed nothing (a failed login): written behind, batched. */
  recordBehind(entry: AuditEntry): void {
    this.recorder.record(entry);
  }

  /**
   * Runs one tool call with its tool.call entry pending: a change the tool makes writes it in its transaction; if
   * none did, it is written behind the answer; if the tool failed, an entry with the error outcome is written behind.
   */
  async runToolCall<T>(entry: AuditEntry, call: () => Promise<T>): Promise<T> {
    const pending = { entry, written: false };
    try {
      const result = await pendingToolCallStorage.run(pending, call);
      if (!pending.written) this.recorder.record(entry);
      return result;
    } catch (error) {
      // Even when the entry was written in a transaction: that transaction rolled back with the failure (or, if the
      // failure came after its commit, both the change and the failure are on record).
      this.recorder.record({ ...entry, outcome: { status: 'error', code: toAppException(error)?.code ?? 'internal' } });
      throw error;
    }
  }

  async page(filter: AuditFilter, query: PageQuery): Promise<Page<AuditEntryView>> {
    await this.recorder.flush();
    return toPage(await this.repository.page(filter, query), query.limit, toAuditView);
  }

  /** Every matching entry, newest first, one keyset page at a time (constant memory for any number of entries). */
  async *export(filter: AuditFilter): AsyncGenerator<AuditEntryView> {
    await this.recorder.flush();
    let cursor: string | undefined;
    do {
      const page = toPage(await this.repository.page(filter, { limit: EXPORT_PAGE, cursor }), EXPORT_PAGE, toAuditView);
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  async flush(): Promise<void> {
    await this.recorder.flush();
  }
}
