import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { AdminPolicyModule } from '../admin-policy/admin-policy.module.js';
import { ApiKeysModule } from '../api-keys/api-keys.module.js';
import { ToolCredentialsModule } from '../api-keys/tool-credentials.module.js';
import { ClientMetadataFetcher } from './client-metadata-fetcher.js';
import { formBodyMiddleware } from './form-body.middleware.js';
import { OAuthAccountController } from './oauth-account.controller.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { OAuthGrantsRepository } from './oauth-grants.repository.js';
import { OAuthGrantCredential } from './oauth-grant.credential.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { OAuthServerController } from './oauth-server.controller.js';

/**
 * Atrium as its own OAuth 2.1 authorization server for the MCP endpoint. Its grants plug into the credential
 * registry (OAuthGrantCredential), so an OAuth access token is one more kind of tool-door caller (see README.md).
 */
@Module({
  imports: [ToolCredentialsModule, ApiKeysModule, AdminPolicyModule],
  controllers: [OAuthServerController, OAuthAccountController],
  providers: [
    OAuthClientsRepository,
    OAuthClientsService,
    OAuthGrantsRepository,
    OAuthGrantsService,
    ClientMetadataFetcher,
    OAuthGrantCredential,
  ],
  exports: [OAuthGrantsService],
})
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(formBodyMiddleware)
      .forRoutes(
        { path: 'oauth/token', method: RequestMethod.POST },
        { path: 'oauth/revoke', method: RequestMethod.POST },
      );
  }
}
