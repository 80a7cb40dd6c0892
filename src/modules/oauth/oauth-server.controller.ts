import { Controller, Get, Inject, Options, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiExcludeEndpoint,
  ApiOperation,
  ApiQuery,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import {
  AuthorizationServerMetadataSchema,
  ClientRegistrationRequestSchema,
  OAuthErrorSchema,
  ProtectedResourceMetadataSchema,
  RegisteredClientSchema,
  RevokeRequestSchema,
  TokenRequestSchema,
  TokenResponseSchema,
} from './oauth.schemas.js';
import {
  InvalidRequestError,
  OAuthError,
  UnauthorizedClientError,
  UnsupportedGrantTypeError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { AdminPolicyService } from '../admin-policy/admin-policy.service.js';
import type { OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Request, Response } from 'express';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import { Public } from '../auth/guards/public.decorator.js';
import {
  checkAuthorizationParams,
  checkRedirectUri,
  redirectWith,
  UntrustedRedirectError,
  type AuthorizationParams,
} from './authorization-request.js';
import { OAuthClientsService, UnknownClientError } from './oauth-clients.service.js';
import { OAuthErrorFilter } from './oauth-error.filter.js';
import { formBody } from './form-body.middleware.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { authorizationServerMetadata } from './authorization-server-metadata.js';

/** The consent page template (public/consent.html); its placeholder receives the checked request as JSON. */
const CONSENT_TEMPLATE_PATH = join(__dirname, '..', '..', '..', 'public', 'consent.html');
const REQUEST_PLACEHOLDER = '{{AUTHORIZATION_REQUEST}}';

/**
 * Atrium as the OAuth 2.1 authorization server of its MCP endpoint (MCP authorization 2025-11-25):
 * RFC 9728 / RFC 8414 metadata, RFC 7591 registration, the authorization endpoint (which serves the
 * consent page), the token endpoint (authorization_code with PKCE S256, refresh_token with rotation) and
 * RFC 7009 revocation. Hand-written Nest routes rather than the SDK's Express `mcpAuthRouter`; see the
 * module README for why. Errors are RFC 6749 bodies (OAuthErrorFilter).
 */
@ApiTags('oauth (authorization server)')
@Public()
@UseFilters(OAuthErrorFilter)
@Controller()
export class OAuthServerController {
  private consentTemplate: string | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clients: OAuthClientsService,
    private readonly grants: OAuthGrantsService,
    private readonly scopes: ScopeCatalog,
    private readonly policy: AdminPolicyService,
  ) {}

  @Get(['.well-known/oauth-protected-resource', '.well-known/oauth-protected-resource/api/v1/public/mcp'])
  @ApiOperation({
    summary:
      'RFC 9728 protected resource metadata of the MCP endpoint (where an MCP client finds its authorization server)',
  })
  @ApiResponse({ status: 200, description: 'The metadata', schema: { $ref: ProtectedResourceMetadataSchema.$ref } })
  protectedResource(@Res() response: Response): void {
    const metadata: OAuthProtectedResourceMetadata = {
      resource: this.grants.mcpResource(),
      authorization_servers: [this.config.publicUrl],
      scopes_supported: this.scopes.names(),
      bearer_methods_supported: ['header'],
      resource_name: 'Atrium MCP',
      resource_documentation: `${this.config.publicUrl}/api/docs`,
    };
    publicJson(response, metadata);
  }

  @Get('.well-known/oauth-authorization-server')
  @ApiOperation({ summary: 'RFC 8414 authorization server metadata' })
  @ApiResponse({ status: 200, description: 'The metadata', schema: { $ref: AuthorizationServerMetadataSchema.$ref } })
  authorizationServer(@Res() response: Response): void {
    publicJson(response, authorizationServerMetadata(this.config, this.scopes.names()));
  }

  /**
   * CORS preflight for browser-based MCP clients (the metadata, registration, token and revocation
   * endpoints take no cookies, so any origin may call them, as the SDK's own auth router allows).
   */
  @Options([
    '.well-known/oauth-protected-resource',
    '.well-known/oauth-protected-resource/api/v1/public/mcp',
    '.well-known/oauth-authorization-server',
    'oauth/register',
    'oauth/token',
    'oauth/revoke',
  ])
  @ApiExcludeEndpoint()
  preflight(@Res() response: Response): void {
    allowAnyOrigin(response);
    response
      .status(204)
      .setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS')
      .setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, MCP-Protocol-Version')
      .setHeader('Access-Control-Max-Age', '600')
      .end();
  }

  @Post('oauth/register')
  @ApiOperation({ summary: 'RFC 7591 dynamic client registration' })
  @ApiBody({ schema: { $ref: ClientRegistrationRequestSchema.$ref } })
  @ApiResponse({
    status: 201,
    description: 'The registered client (Cache-Control: no-store)',
    schema: { $ref: RegisteredClientSchema.$ref },
  })
  @ApiResponse({
    status: 400,
    description: 'invalid_redirect_uri or invalid_client_metadata',
    schema: { $ref: OAuthErrorSchema.$ref },
  })
  async register(@Req() request: Request, @Res() response: Response): Promise<void> {
    const registered = await this.clients.register(request.body);
    response.status(201).setHeader('Cache-Control', 'no-store').setHeader('Pragma', 'no-cache');
    allowAnyOrigin(response);
    response.json(registered);
  }

  /**
   * Every invalid request is an HTML error page, never a redirect: step 1 failures (unknown client, redirect URI not
   * registered) say so; step 2 failures (bad parameters of a valid client and redirect URI) link to the redirect URI
   * with the RFC 6749 error for the user to follow. A valid request gets the consent page.
   */
  @Get('oauth/authorize')
  @ApiOperation({
    summary: 'Authorization endpoint: the consent page for a valid request (authorization code + PKCE S256)',
  })
  @ApiQuery({ name: 'response_type', required: true, schema: { type: 'string', enum: ['code'] } })
  @ApiQuery({ name: 'client_id', required: true, schema: { type: 'string' } })
  @ApiQuery({ name: 'redirect_uri', required: true, schema: { type: 'string' } })
  @ApiQuery({ name: 'code_challenge', required: true, schema: { type: 'string' } })
  @ApiQuery({ name: 'code_challenge_method', required: true, schema: { type: 'string', enum: ['S256'] } })
  @ApiQuery({ name: 'scope', required: false, schema: { type: 'string' }, description: 'Space-separated scopes' })
  @ApiQuery({ name: 'state', required: false, schema: { type: 'string' } })
  @ApiQuery({
    name: 'resource',
    required: false,
    schema: { type: 'string', format: 'uri' },
    description: 'RFC 8707: the MCP endpoint',
  })
  @ApiResponse({
    status: 200,
    description: 'The consent page',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  @ApiResponse({
    status: 400,
    description:
      'Any invalid request: an error page, never a redirect (RFC 9700 §4.11.2). When the client and redirect URI are valid and only other parameters are bad, the page links to the redirect URI with the RFC 6749 error, state and iss for the user to follow',
    content: { 'text/html': { schema: { type: 'string' } } },
  })
  async authorize(@Query() query: Record<string, unknown>, @Res() response: Response): Promise<void> {
    response.setHeader('Cache-Control', 'no-store');
    const params = singleValued(query) as AuthorizationParams;
    let redirectUri: string;
    let client;
    try {
      client = await this.clients.resolve(params.client_id);
      redirectUri = checkRedirectUri(client, params.redirect_uri);
    } catch (error) {
      if (error instanceof UnknownClientError || error instanceof UntrustedRedirectError) {
        errorPage(
          response,
          error instanceof UnknownClientError
            ? `This app is not known to Atrium: ${error.message}.`
            : `This app asked to return to an address it did not register (${error.message}).`,
        );
        return;
      }
      throw error;
    }
    try {
      // RFC 6749 §4.1.2.1: a valid client the organisation does not allow gets unauthorized_client.
      if (!(await this.policy.oauthClientAllowed(client)))
        throw new UnauthorizedClientError('the organisation’s admin policy does not allow this app');
      const checked = checkAuthorizationParams(
        client,
        redirectUri,
        params,
        this.grants.mcpResource(),
        this.scopes.names(),
      );
      const request = {
        clientId: client.clientId,
        clientName: client.clientName,
        redirectUri,
        redirectHost: hostOf(redirectUri),
        codeChallenge: checked.codeChallenge,
        codeChallengeMethod: 'S256',
        scopes: checked.scopes,
        state: checked.state ?? null,
        resource: checked.resource,
      };
      // A function replacer: a string one would expand `$&`, `$'`, … found in the client's name or the state.
      const json = scriptSafeJson(request);
      response
        .status(200)
        .type('html')
        .send(this.consentPage().replace(REQUEST_PLACEHOLDER, () => json));
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      // RFC 9700 §4.11.2: anyone may register a client, so its redirect URI is not trusted enough to be sent to
      // without the user: an error page, with the error response as a link the user may choose to follow.
      const state = (error as OAuthError & { state?: string }).state;
      const back = redirectWith(redirectUri, {
        error: error.errorCode,
        error_description: error.message,
        state,
        iss: this.config.publicUrl,
      });
      errorPage(response, `The app sent an invalid request (${error.errorCode}: ${error.message}).`, {
        href: back,
        host: hostOf(redirectUri),
      });
    }
  }

  @Post('oauth/token')
  @ApiOperation({ summary: 'Token endpoint: authorization_code (with the PKCE verifier) or refresh_token (rotating)' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ schema: { $ref: TokenRequestSchema.$ref }, required: true })
  @ApiResponse({
    status: 200,
    description: 'Tokens (Cache-Control: no-store)',
    schema: { $ref: TokenResponseSchema.$ref },
  })
  @ApiResponse({
    status: 400,
    description:
      'invalid_request, invalid_grant, unsupported_grant_type, invalid_scope, unauthorized_client (the admin policy allowedOAuthClients)',
    schema: { $ref: OAuthErrorSchema.$ref },
  })
  @ApiResponse({ status: 401, description: 'invalid_client', schema: { $ref: OAuthErrorSchema.$ref } })
  async token(@Req() request: Request, @Res() response: Response): Promise<void> {
    const body = formBody(request);
    const client = await this.clients.authenticate(request, body);
    // RFC 6749 §5.2: neither a code nor a refresh token of a client the admin policy no longer allows is honoured.
    if (!(await this.policy.oauthClientAllowed(client)))
      throw new UnauthorizedClientError('The organisation’s admin policy does not allow this app');
    let tokens;
    if (body.grant_type === 'authorization_code') tokens = await this.grants.exchangeCode(client, body);
    else if (body.grant_type === 'refresh_token') tokens = await this.grants.refresh(client, body);
    else if (body.grant_type === undefined) throw new InvalidRequestError('grant_type is required');
    else throw new UnsupportedGrantTypeError('grant_type must be authorization_code or refresh_token');
    response.status(200).setHeader('Cache-Control', 'no-store').setHeader('Pragma', 'no-cache');
    allowAnyOrigin(response);
    response.json(tokens);
  }

  @Post('oauth/revoke')
  @ApiOperation({ summary: 'RFC 7009 revocation of an access or refresh token' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ schema: { $ref: RevokeRequestSchema.$ref }, required: true })
  @ApiResponse({
    status: 200,
    description: 'Revoked (or unknown: RFC 7009 answers 200 either way)',
    schema: { type: 'object', maxProperties: 0 },
  })
  @ApiResponse({ status: 400, description: 'invalid_request', schema: { $ref: OAuthErrorSchema.$ref } })
  @ApiResponse({ status: 401, description: 'invalid_client', schema: { $ref: OAuthErrorSchema.$ref } })
  async revoke(@Req() request: Request, @Res() response: Response): Promise<void> {
    const body = formBody(request);
    const client = await this.clients.authenticate(request, body);
    await this.grants.revokeToken(client, body.token);
    response.status(200).setHeader('Cache-Control', 'no-store');
    allowAnyOrigin(response);
    response.json({});
  }

  private consentPage(): string {
    this.consentTemplate ??= readFileSync(CONSENT_TEMPLATE_PATH, 'utf8');
    return this.consentTemplate;
  }
}

/** Metadata is public and read by browser-based MCP clients from other origins. */
function publicJson(response: Response, body: unknown): void {
  allowAnyOrigin(response);
  response.status(200).setHeader('Cache-Control', 'public, max-age=300').json(body);
}

function allowAnyOrigin(response: Response): void {
  response.setHeader('Access-Control-Allow-Origin', '*');
}

/** A repeated query parameter is malformed (RFC 6749 §3.1); such a value is dropped so the checks refuse it. */
function singleValued(query: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(query)) out[name] = typeof value === 'string' ? value : undefined;
  return out;
}

function hostOf(uri: string): string {
  const url = new URL(uri);
  return url.host || `${url.protocol}${url.pathname}`;
}

/** JSON inside a <script type="application/json">: no `<`, so nothing can close the element. */
function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
}

function errorPage(response: Response, message: string, back?: { href: string; host: string }): void {
  const link = back
    ? `<p><a href="${escapeHtml(back.href)}" rel="noreferrer">Return to ${escapeHtml(back.host)} with this error</a></p>`
    : '';
  response
    .status(400)
    .type('html')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Cannot connect this app</title><link rel="stylesheet" href="/styles.css"></head>` +
        `<body><main id="main"><h1>Cannot connect this app</h1><p>${escapeHtml(message)}</p><p>Nothing was shared. Go back to the app and try connecting again, or ask its maker.</p>${link}</main></body></html>`,
    );
}
