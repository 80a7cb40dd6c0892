import { accountHolder, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Delete, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Response } from 'express';
import { AppException } from '../../common/errors/app.exception.js';
import { PageQueryDto } from '../../common/pagination/page-query.dto.js';
import { ScopeCatalog } from '../tool-kit/scope-catalog.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';
import { checkedAllowlist } from '../tool-kit/tool-restriction.js';
import {
  checkAuthorizationParams,
  checkRedirectUri,
  redirectWith,
  UntrustedRedirectError,
} from './authorization-request.js';
import { AuthorizeConsentDto } from './dto/authorize-consent.dto.js';
import { OAuthClientsService, UnknownClientError } from './oauth-clients.service.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import { AuthorizeAnswerSchema, OAuthGrantSchema, RevokedGrantSchema } from './oauth.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

/** Area B, user access token only: the consent page's answer and the account page's "connected apps". */
@ApiTags('oauth')
@BackendController('api/oauth')
export class OAuthAccountController {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly grants: OAuthGrantsService,
    private readonly scopes: ScopeCatalog,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: ToolRegistry,
  ) {}

  @Post('authorize')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Approve or deny an authorization request; answers where to send the browser ({redirectTo})',
  })
  @ApiData(200, AuthorizeAnswerSchema, 'Where to send the browser (Cache-Control: no-store)')
  async authorize(
    @CurrentCaller() caller: Caller,
    @Body() body: AuthorizeConsentDto,
    @Res({ passthrough: true }) response: Response,
  ): Promise<{ redirectTo: string }> {
    const userId = userOnly(caller);
    if (body.scopes) this.scopes.assertKnown(body.scopes);
    // The answer carries a one-time code.
    response.setHeader('Cache-Control', 'no-store');
    let request;
    try {
      const client = await this.clients.resolve(body.clientId);
      const redirectUri = checkRedirectUri(client, body.redirectUri);
      request = checkAuthorizationParams(
        client,
        redirectUri,
        {
          response_type: 'code',
          code_challenge: body.codeChallenge,
          code_challenge_method: body.codeChallengeMethod,
          scope: body.scope,
          state: body.state,
          resource: body.resource,
        },
        this.grants.mcpResource(),
        this.scopes.names(),
      );
    } catch (error) {
      if (
        error instanceof UnknownClientError ||
        error instanceof UntrustedRedirectError ||
        error instanceof OAuthError
      ) {
        throw AppException.validation(`The authorization request is not valid: ${error.message}`, [
          { field: fieldOf(error), message: error.message },
        ]);
      }
      throw error;
    }
    if (!body.approve)
      return {
        redirectTo: redirectWith(request.redirectUri, {
          error: 'access_denied',
          error_description: 'The user denied access',
          state: request.state,
          iss: this.config.publicUrl,
        }),
      };
    const scopes = body.scopes ? [...new Set(body.scopes)] : request.scopes;
    const notRequested = scopes.filter((scope) => !request.scopes.includes(scope));
    if (notRequested.length > 0) {
      throw AppException.validation(`scopes may only narrow what the app asked for (${request.scopes.join(' ')})`, [
        { field: 'scopes', message: `not requested: ${notRequested.join(', ')}` },
      ]);
    }
    const code = await this.grants.issueCode(userId, request, {
      scopes,
      projectIds: body.projectIds ? [...new Set(body.projectIds.map((id) => id.toLowerCase()))] : null,
      repos: body.repos ? [...new Set(body.repos)] : null,
      expiresIn: body.expiresIn ?? '90d',
      confirmWrites: body.confirmWrites ?? false,
      tools: checkedAllowlist(body.tools, scopes, (name) => this.registry.get(name)),
      readOnly: body.readOnly ?? false,
      allowedIps: body.allowedIps ?? null,
    });
    return {
      redirectTo: redirectWith(request.redirectUri, { code, state: request.state, iss: this.config.publicUrl }),
    };
  }

  @Get('grants')
  @ApiOperation({ summary: "The caller's connected apps (OAuth grants), newest first: {items, nextCursor}" })
  @ApiData(200, page(OAuthGrantSchema), 'A page of grants')
  list(@CurrentCaller() caller: Caller, @Query() query: PageQueryDto) {
    return this.grants.list(userOnly(caller), query);
  }

  @Delete('grants/:id')
  @ApiOperation({ summary: 'Disconnect an app: every token of the grant stops working at once, on every instance' })
  @ApiData(200, RevokedGrantSchema, 'Revoked')
  @ApiErrors(404)
  revoke(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return this.grants.revoke(userOnly(caller), id);
  }
}

function fieldOf(error: Error): string {
  if (error instanceof UnknownClientError) return 'clientId';
  if (error instanceof UntrustedRedirectError) return 'redirectUri';
  const code = (error as OAuthError).errorCode;
  return code === 'invalid_scope' ? 'scope' : code === 'invalid_target' ? 'resource' : 'codeChallenge';
}

/** Apps are connected to the account: a caller pinned to a project (a project session token) never authorises or lists them. */
function userOnly(caller: Caller): string {
  return accountHolder(caller, 'Connected apps');
}
