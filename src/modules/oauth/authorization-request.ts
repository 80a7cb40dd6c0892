import {
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  OAuthError,
  UnsupportedResponseTypeError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthClient } from './oauth-clients.service.js';
import { PKCE_VALUE } from './oauth-secret-format.js';
import { redirectUriMatches } from './redirect-uri.js';

/** The parameters of GET /oauth/authorize (and of the consent page's POST), as strings or absent. */
export interface AuthorizationParams {
  response_type?: unknown;
  client_id?: unknown;
  redirect_uri?: unknown;
  code_challenge?: unknown;
  code_challenge_method?: unknown;
  scope?: unknown;
  state?: unknown;
  resource?: unknown;
}

/** A checked authorization request: what the consent page shows and what a code is bound to. */
export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  state: string | undefined;
  resource: string;
}

/** Step 1 failed: the redirect URI cannot be trusted, so the answer is an error page, never a redirect. */
export class UntrustedRedirectError extends Error {}

/**
 * Step 1 (RFC 6749 §4.1.2.1): the redirect URI must be one the client registered (any port on
 * loopback). Without one, a client with exactly one registered URI uses it.
 */
export function checkRedirectUri(client: OAuthClient, requested: unknown): string {
  if (requested === undefined || requested === '') {
    if (client.redirectUris.length === 1) return client.redirectUris[0];
    throw new UntrustedRedirectError('redirect_uri is required: this client registered several');
  }
  if (
    typeof requested !== 'string' ||
    !client.redirectUris.some((registered) => redirectUriMatches(requested, registered))
  ) {
    throw new UntrustedRedirectError('redirect_uri is not one this client registered');
  }
  return requested;
}

/**
 * Step 2: everything else. These failures may be reported to the (now trusted) redirect URI as
 * RFC 6749 errors. PKCE S256 is required; `plain` and no PKCE are refused (OAuth 2.1).
 */
export function checkAuthorizationParams(
  client: OAuthClient,
  redirectUri: string,
  params: AuthorizationParams,
  mcpResource: string,
  /** Every scope, in catalog order (ScopeCatalog.names()). */
  knownScopes: readonly string[],
): AuthorizationRequest {
  const state = typeof params.state === 'string' && params.state !== '' ? params.state : undefined;
  const fail = (error: OAuthError): never => {
    throw Object.assign(error, { state });
  };
  if (params.response_type !== 'code') fail(new UnsupportedResponseTypeError('response_type must be code'));
  if (typeof params.code_challenge !== 'string' || params.code_challenge === '')
    fail(new InvalidRequestError('code_challenge is required (PKCE with S256)'));
  if (params.code_challenge_method !== 'S256')
    fail(new InvalidRequestError('code_challenge_method must be S256 (plain and no PKCE are not supported)'));
  if (!PKCE_VALUE.test(params.code_challenge as string))
    fail(new InvalidRequestError('code_challenge is not a valid S256 challenge'));
  if (state !== undefined && state.length > 1000) fail(new InvalidRequestError('state is too long'));
  if (params.resource !== undefined && !isMcpResource(params.resource, mcpResource)) {
    fail(new InvalidTargetError(`resource must be the MCP endpoint ${mcpResource}`));
  }
  let scopes: string[] = [...knownScopes];
  if (params.scope !== undefined && params.scope !== '') {
    if (typeof params.scope !== 'string') fail(new InvalidScopeError('scope must be a space-separated string'));
    const requested = [...new Set((params.scope as string).split(' ').filter(Boolean))];
    const unknown = requested.filter((scope) => !knownScopes.includes(scope));
    if (unknown.length > 0 || requested.length === 0)
      fail(new InvalidScopeError(`unknown scope ${unknown.join(' ')}; allowed: ${knownScopes.join(' ')}`));
    scopes = knownScopes.filter((scope) => requested.includes(scope));
  }
  return { client, redirectUri, codeChallenge: params.code_challenge as string, scopes, state, resource: mcpResource };
}

/** The redirect URI with RFC 6749 response parameters appended (existing query kept). */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

/** RFC 8707 resource check: the MCP endpoint's URI, with or without a trailing slash (as a user may type it). */
export function isMcpResource(value: unknown, mcpResource: string): boolean {
  return typeof value === 'string' && (value === mcpResource || value === `${mcpResource}/`);
}
