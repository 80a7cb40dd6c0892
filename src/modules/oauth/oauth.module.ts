import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ClientMetadataFetcher } from './client-metadata-fetcher.js';
import { formBodyMiddleware } from './form-body.middleware.js';
import { OAuthAccountController } from './oauth-account.controller.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { OAuthGrant } from './oauth-grant.entity.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { OAuthServerController } from './oauth-server.controller.js';

/**
 * Atrium as its own OAuth 2.1 authorization server for the MCP endpoint. Exports the access-token check
 * the Area A strategy uses, so an OAuth token is one more kind of Area A principal (see README.md).
 */
@Module({
  imports: [TypeOrmModule.forFeature([OAuthGrant])],
  controllers: [OAuthServerController, OAuthAccountController],
  providers: [OAuthClientsService, OAuthGrantsService, ClientMetadataFetcher],
  exports: [OAuthGrantsService],
})
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(formBodyMiddleware).forRoutes({ path: 'oauth/token', method: RequestMethod.POST }, { path: 'oauth/revoke', method: RequestMethod.POST });
  }
}
