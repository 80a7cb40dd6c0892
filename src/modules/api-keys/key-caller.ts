import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { Actor } from '../../common/auth/actor.js';
import type { ApiKeyPrincipal } from './api-key.principal.js';

/** Whom an Area A call acts for: the key's owner (with the key's pins) and the key's scopes. */
export interface KeyCaller {
  actor: Actor;
  scopes: readonly string[];
  keyId: string;
  /** The credential asks the user to confirm write tools (see KeyToolCallsService.confirmationNeeded). */
  confirmWrites: boolean;
}

const KEY_CALLER = Symbol('atrium:key-caller');
type CallerRequest = Request & { user?: ApiKeyPrincipal; [KEY_CALLER]?: KeyCaller };

/**
 * Resolves the owner id, scopes and pins once per call from the authenticated credential (ApiKeyAuthGuard calls
 * this right after authenticating) for the handler to receive explicitly (`@Caller()`); nothing downstream reads
 * the request to find out who is asking. Done in the guard rather than in an interceptor of its own: each
 * interceptor wraps every tool call in a chain of RxJS observables, each a measurable share of its allocations.
 */
export function attachKeyCaller(request: Request, principal: ApiKeyPrincipal): KeyCaller {
  const caller = keyCallerOf(principal);
  (request as CallerRequest)[KEY_CALLER] = caller;
  return caller;
}

/** The one place an Area A credential becomes its caller: the owner with the credential's pins, and its scopes. */
export function keyCallerOf(principal: ApiKeyPrincipal): KeyCaller {
  return Object.freeze({
    actor: Object.freeze({
      userId: principal.userId,
      projectIds: principal.projectIds ? Object.freeze([...principal.projectIds]) : null,
      repos: principal.repos ? Object.freeze([...principal.repos]) : null,
    }),
    scopes: Object.freeze([...principal.scopes]),
    keyId: principal.keyId,
    confirmWrites: principal.confirmWrites,
  });
}

/** The KeyCaller ApiKeyAuthGuard resolved; fails closed if the guard did not run. */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): KeyCaller => {
  const caller = context.switchToHttp().getRequest<CallerRequest>()[KEY_CALLER];
  if (!caller) throw new Error('Caller() used on a route without ApiKeyAuthGuard');
  return caller;
});
