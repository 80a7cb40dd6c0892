import { randomBytes } from 'node:crypto';
import type { Caller } from '../../common/auth/caller.js';

/** The actions API.md lists ("Audit log (revision 2)"); one entry per action. */
export const AUDIT_ACTIONS = [
  'tool.call',
  'api_key.create',
  'api_key.revoke',
  'api_key.roll',
  'policy.update',
  'oauth.grant',
  'oauth.revoke',
  'project.create',
  'project.update',
  'project.member.set',
  'project.token.create',
  'project.token.revoke',
  'document.upload',
  'document.delete',
  'github_repo.register',
  'github_repo.delete',
  'auth.login_failed',
  'agent.approve',
  'agent.reject',
  'agent.cancel',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Which credential acted. */
export const AUDIT_VIA = ['user_token', 'api_key', 'oauth', 'project_token', 'agent_run'] as const;
export type AuditVia = (typeof AUDIT_VIA)[number];

/** Who acted, and through what. `userId` is null only for a failed login naming no account. */
export interface AuditActor {
  userId: string | null;
  via: AuditVia;
  /** The API key, OAuth grant or project session token id; null for a user access token (it has no id). */
  credentialId: string | null;
  /** The MCP client's clientInfo.name, or the OAuth client's name (filled in when written, from the grant). */
  clientName?: string;
  /** The MCP client's clientInfo.version, when it named itself. */
  clientVersion?: string;
  runId?: string;
}

export interface AuditTarget {
  type: string;
  id: string;
}

export interface AuditOutcome {
  status: 'ok' | 'error';
  code?: string;
}

/** One entry as it is written. */
export interface AuditEntry {
  id: string;
  at: Date;
  action: AuditAction;
  actor: AuditActor;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  details: Record<string, unknown>;
}

/** One entry as the routes answer it. */
export interface AuditEntryView {
  id: string;
  at: string;
  action: AuditAction;
  actor: AuditActor;
  target: AuditTarget | null;
  outcome: AuditOutcome;
  details: Record<string, unknown>;
}

/**
 * A UUIDv7 (RFC 9562) for `at`: 48 bits of Unix milliseconds, then random bits, so ids sort by time. Written here
 * because neither Node nor the `uuid` package in the tree (v8) makes one, and PGlite has no uuidv7(); it is a
 * layout of bytes, not an algorithm worth a dependency.
 */
export function uuidV7(at: Date): string {
  const bytes = randomBytes(16);
  const ms = BigInt(at.getTime());
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = 0x70 | (bytes[6] & 0x0f);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** How the audit log names a caller: its kind's `via` and credential, and the client program when one is known. */
export function auditActorOf(caller: Caller): AuditActor {
  const client = caller.client;
  return {
    userId: caller.userId,
    via: caller.via as AuditVia,
    credentialId: caller.credentialId,
    ...(client !== undefined ? { clientName: client.name, clientVersion: client.version } : {}),
    ...(caller.runId !== undefined ? { runId: caller.runId } : {}),
  };
}

export function newAuditEntry(fields: Omit<AuditEntry, 'id' | 'at'>, at = new Date()): AuditEntry {
  return { id: uuidV7(at), at, ...fields };
}

export function toAuditView(entry: AuditEntry): AuditEntryView {
  return { ...entry, at: entry.at.toISOString() };
}
