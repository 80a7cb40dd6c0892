import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { PassportModule } from '@nestjs/passport';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { AdminBootstrapService } from './admin-bootstrap.service.js';
import { AuthController } from './auth.controller.js';
import { AuthService } from './auth.service.js';
import { CredentialLivenessService } from './credential-liveness.service.js';
import { ProjectSessionTokensRepository } from './project-session-tokens.repository.js';
import { ProjectSessionTokensService } from './project-session-tokens.service.js';
import { JwtStrategy } from './strategies/jwt.strategy.js';
import { ProjectTokenStrategy } from './strategies/project-token.strategy.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

@Module({
  imports: [
    PassportModule,
    JwtModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        secret: config.secrets.jwtSecret,
        signOptions: { algorithm: 'HS256', expiresIn: config.auth.accessTokenTtlSeconds },
      }),
    }),
  ],
  controllers: [AuthController],
  providers: [UsersRepository, UsersService, ProjectSessionTokensRepository, AuthService, JwtStrategy, AdminBootstrapService, ProjectSessionTokensService, ProjectTokenStrategy, CredentialLivenessService],
  exports: [UsersService, ProjectSessionTokensService, CredentialLivenessService],
})
export class AuthModule {}
