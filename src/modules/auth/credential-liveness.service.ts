import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import type { AccessTokenClaims } from './auth.service.js';
import { PROJECT_TOKEN_PREFIX, ProjectSessionTokensService } from './project-session-tokens.service.js';
import { JwtStrategy } from './strategies/jwt.strategy.js';

/** A credential that still works: until when at the latest. */
export interface LiveCredential {
  expiresAt: Date;
}

/**
 * Whether an Area B credential (a user access token or a project session token) works now, looked up exactly as the
 * auth guard looks it up (JwtStrategy; ProjectSessionTokensService.verify), for work that outlives its request, such
 * as a run stream: it re-checks every few seconds and ends when the credential expired or was revoked.
 */
@Injectable()
export class CredentialLivenessService {
  constructor(
    private readonly jwt: JwtService,
    private readonly jwtStrategy: JwtStrategy,
    private readonly projectTokens: ProjectSessionTokensService,
  ) {}

  /** The credential's expiry if it works now, else null (expired, revoked, unknown, its user gone). */
  async check(bearer: string): Promise<LiveCredential | null> {
    if (bearer.startsWith(PROJECT_TOKEN_PREFIX)) {
      const token = await this.projectTokens.verify(bearer);
      return token ? { expiresAt: token.expiresAt } : null;
    }
    let claims: AccessTokenClaims & { exp?: number };
    try {
      claims = await this.jwt.verifyAsync<AccessTokenClaims & { exp?: number }>(bearer, { algorithms: ['HS256'] });
    } catch {
      return null; // expired or not ours
    }
    if (typeof claims.exp !== 'number' || !(await this.jwtStrategy.validate(claims))) return null;
    return { expiresAt: new Date(claims.exp * 1000) };
  }
}
