import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { AdminBootstrapService } from './admin-bootstrap.service.js';
import { AuthController } from './auth.controller.js';
import { AuthService } from './auth.service.js';
import { ProjectTokenCredential } from './credentials/project-token.credential.js';
import { UserTokenCredential } from './credentials/user-token.credential.js';
import { ProjectSessionTokensRepository } from './project-session-tokens.repository.js';
import { ProjectSessionTokensService } from './project-session-tokens.service.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

@Module({
  imports: [
    JwtModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        secret: config.secrets.jwtSecret,
        signOptions: { algorithm: 'HS256', expiresIn: config.auth.accessTokenTtlSeconds },
      }),
    }),
  ],
  controllers: [AuthController],
  // The two backend credential kinds plug into the CredentialRegistry (src/modules/credentials/).
  providers: [
    UsersRepository,
    UsersService,
    ProjectSessionTokensRepository,
    AuthService,
    AdminBootstrapService,
    ProjectSessionTokensService,
    UserTokenCredential,
    ProjectTokenCredential,
  ],
  exports: [UsersService, ProjectSessionTokensService],
})
export class AuthModule {}
