import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { attachCaller, callerOf, type Caller as AnyCaller } from '../../common/auth/caller.js';

/** A tool-door caller: every tool credential has an id, which the doors also know as `keyId`. */
export type KeyCaller = AnyCaller & { readonly keyId: string };

/**
 * Puts the authenticated tool-door caller on the request once per call (ApiKeyAuthGuard calls this right after
 * authenticating) for the handler to receive explicitly (`@Caller()`) and the audit log to name; nothing downstream
 * reads the request to find out who is asking. Done in the guard rather than in an interceptor of its own: each
 * interceptor wraps every tool call in a chain of RxJS observables, each a measurable share of its allocations.
 */
export function attachKeyCaller(request: Request, caller: AnyCaller): KeyCaller {
  const keyCaller = keyCallerOf(caller);
  attachCaller(request, keyCaller);
  return keyCaller;
}

/** A tool credential's caller as the doors take it. */
export function keyCallerOf(caller: AnyCaller): KeyCaller {
  if (caller.credentialId === null)
    throw new Error(`A ${caller.kind} caller has no credential id: not a tool-door caller`);
  return Object.freeze({ ...caller, keyId: caller.credentialId });
}

/** The KeyCaller ApiKeyAuthGuard resolved; fails closed if the guard did not run. */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): KeyCaller => {
  const caller = callerOf(context.switchToHttp().getRequest<Request>()) as KeyCaller | undefined;
  if (!caller?.keyId) throw new Error('Caller() used on a route without ApiKeyAuthGuard');
  return caller;
});
