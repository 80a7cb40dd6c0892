import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuditActor, AuditEntry } from './audit-entry.js';

// The HTTP request a service call runs for (so an audit entry can name the credential that acted: the services take
// an Actor, which says whose data, not through which credential) is the request context's (RequestContext.request).

/**
 * Who acts in work that runs outside an HTTP request but on someone's behalf (a script, an in-process test calling
 * services directly): `runAsAuditActor(actor, () => service.change(…))`. Without a request or this, an audited
 * change refuses to run (AuditService.recordChange fails closed).
 */
const explicitActorStorage = new AsyncLocalStorage<AuditActor>();

export function runAsAuditActor<T>(actor: AuditActor, work: () => T): T {
  return explicitActorStorage.run(actor, work);
}

export function explicitAuditActor(): AuditActor | undefined {
  return explicitActorStorage.getStore();
}

/**
 * A tool call in progress: its tool.call entry, waiting to be written in the transaction of the change the tool
 * makes (AuditService.recordChange), or behind the answer when the tool changed nothing in the database.
 */
export interface PendingToolCall {
  entry: AuditEntry;
  /** Written inside a change's transaction (which may still roll back: a failure writes an error entry anyway). */
  written: boolean;
}

export const pendingToolCallStorage = new AsyncLocalStorage<PendingToolCall>();
