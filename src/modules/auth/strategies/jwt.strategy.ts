import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { isUuid } from '../../../common/validation/uuid.js';
import type { AppConfig } from '../../../config/app-config.js';
import { APP_CONFIG } from '../../../config/app-config.token.js';
import type { AccessTokenClaims } from '../auth.service.js';
import type { UserPrincipal } from '../principal.js';
import { UsersService } from '../users.service.js';

@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly users: UsersService,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: config.secrets.jwtSecret,
      algorithms: ['HS256'],
      ignoreExpiration: false,
    });
  }

  /**
   * A well-signed token still names a user who must exist now (a token whose subject is unknown, or not
   * even a uuid, is a 401, never a 500 further down), and carries that user's current role: a demoted
   * admin loses admin routes at once, not when the token expires.
   */
  async validate(claims: AccessTokenClaims): Promise<UserPrincipal | false> {
    if (claims.typ !== 'access' || typeof claims.sub !== 'string' || !isUuid(claims.sub)) return false;
    const user = await this.users.findById(claims.sub);
    if (!user) return false;
    return { kind: 'user', userId: user.id, role: user.role, trackerId: `user:${user.id}` };
  }
}
