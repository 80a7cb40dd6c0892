import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';
import type { Actor } from './actor.js';

/** The client program behind a call, as it named itself (MCP `clientInfo`): a label for attribution, never trusted. */
export interface CallerClient {
  name: string;
  version: string;
}

/**
 * What narrows a caller's tools within its scopes: the credential's own choice (`tools`, `readOnly`) and the request's
 * (`toolsets`, `readOnly`). Narrowing only; the rule that applies it is src/modules/tool-kit/tool-restriction.ts.
 */
export interface ToolRestriction {
  /** Only these tool names; null: every tool the scopes allow. */
  readonly tools: readonly string[] | null;
  /** Only tools marked `readOnlyHint: true`. */
  readonly readOnly: boolean;
  /** Only the tools of these toolsets (tool providers' groups); null: every toolset. */
  readonly toolsets: readonly string[] | null;
}

/**
 * Who is calling, through which credential: what the credential kind that authenticated the request made of it
 * (src/modules/credentials/). Every layer that needs "who" takes this, whatever the kind: the doors and the tools
 * (actor, scopes, pins, confirmWrites), the limiters (budgetKey) and the audit log (via, credentialId, client).
 */
export interface Caller {
  /** The credential kind's registered name, e.g. `api-key`; what the registry finds its plug-in by. */
  kind: string;
  /** How the audit log names the kind (`actor.via`). */
  via: string;
  /** The credential's id (key, grant, project token…); null for a credential without one (a user access token). */
  credentialId: string | null;
  userId: string;
  /** On whose behalf and within which pins the call acts. */
  actor: Actor;
  /** The tool scopes the credential carries; empty for a credential that calls no tool. */
  scopes: readonly string[];
  /** Narrows the tools within the scopes; absent: every tool the scopes allow. */
  restriction?: ToolRestriction;
  /** Write tools are confirmed with the user before they run (API.md, "Confirmation on the MCP door"). */
  confirmWrites: boolean;
  /** Reported to the caller where its kind says so (X-Api-Key-Expires-At); null otherwise. */
  expiresAt: Date | null;
  /** The budget the call spends on the per-caller limits. */
  budgetKey: string;
  /** Filled in by the MCP door from the client's `clientInfo`. */
  client?: CallerClient;
  /** Set for a caller acting inside an agent run. */
  runId?: string;
  /** Installation-wide power (the admin routes): set only by a kind that signs in an admin user. */
  admin?: true;
}

/**
 * The Actor a backend request acts as. `projectId` is the project the request names (route param, query or body), when
 * it names one: a caller pinned to other projects is the wrong credential for that request, so 401, not 404.
 */
export function actorFor(caller: Caller, projectId?: string | null): Actor {
  const pins = caller.actor.projectIds;
  if (projectId != null && pins !== null && !pins.includes(projectId)) {
    throw new AppException(
      ErrorCode.AuthInvalid,
      'This credential belongs to another project; use a project session token of that project or a user access token from POST /api/auth/login',
    );
  }
  return caller.actor;
}

/**
 * The account a route manages (keys, connected apps): only a caller that is not pinned to a project manages its
 * account. `what` completes the 401's message: "… are managed with a user access token".
 */
export function accountHolder(caller: Caller, what: string): string {
  if (caller.actor.projectIds !== null) {
    throw new AppException(
      ErrorCode.AuthInvalid,
      `${what} are managed with a user access token from POST /api/auth/login`,
    );
  }
  return caller.userId;
}

/**
 * Whose Idempotency-Key space a request uses: each credential has its own, so a project session token never replays
 * what its minting user (or another token of that user) was answered. A credential without an id is its user's.
 */
export function idempotencyKeySpace(caller: Caller, operation: string): string {
  return caller.credentialId === null ? operation : `${operation}@token:${caller.credentialId}`;
}

const CALLER = Symbol('atrium:caller');
type CallerRequest = Request & { [CALLER]?: Caller };

/** Put by the guard that authenticated the request; read by whoever needs the caller later in the same request. */
export function attachCaller(request: Request, caller: Caller): void {
  (request as CallerRequest)[CALLER] = caller;
}

/** The caller a guard attached to this request; undefined on a route nobody authenticated. */
export function callerOf(request: Request): Caller | undefined {
  return (request as CallerRequest)[CALLER];
}

/** The request's caller now known to come from this client (the MCP door learns it after authentication). */
export function attachCallerClient(request: Request, client: CallerClient): void {
  const caller = callerOf(request);
  if (caller) attachCaller(request, { ...caller, client });
}

/** The caller the route's auth guard attached; fails closed on a route nobody authenticated. */
export const CurrentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const caller = callerOf(context.switchToHttp().getRequest<Request>());
  if (!caller) throw new Error('CurrentCaller() used on a route without an auth guard');
  return caller;
});
