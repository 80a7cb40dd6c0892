import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { ToolCredentialsModule } from '../api-keys/tool-credentials.module.js';
import { ClientMetadataFetcher } from './client-metadata-fetcher.js';
import { formBodyMiddleware } from './form-body.middleware.js';
import { OAuthAccountController } from './oauth-account.controller.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { OAuthGrantsRepository } from './oauth-grants.repository.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { OAuthServerController } from './oauth-server.controller.js';

/**
 * Atrium as its own OAuth 2.1 authorization server for the MCP endpoint. Exports the access-token check
 * the Area A strategy uses, so an OAuth token is one more kind of Area A principal (see README.md).
 */
@Module({
  imports: [ToolCredentialsModule],
  controllers: [OAuthServerController, OAuthAccountController],
  providers: [OAuthClientsRepository, OAuthClientsService, OAuthGrantsRepository, OAuthGrantsService, ClientMetadataFetcher],
  exports: [OAuthGrantsService],
})
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(formBodyMiddleware).forRoutes({ path: 'oauth/token', method: RequestMethod.POST }, { path: 'oauth/revoke', method: RequestMethod.POST });
  }
}
