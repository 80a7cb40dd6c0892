import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import type { AppConfig } from '../../../config/app-config.js';
import { APP_CONFIG } from '../../../config/app-config.token.js';
import type { AccessTokenClaims } from '../auth.service.js';
import type { UserPrincipal, UserRole } from '../principal.js';

@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: config.secrets.jwtSecret,
      algorithms: ['HS256'],
      ignoreExpiration: false,
    });
  }

  validate(claims: AccessTokenClaims): UserPrincipal | false {
    if (claims.typ !== 'access' || typeof claims.sub !== 'string') return false;
    return { kind: 'user', userId: claims.sub, role: claims.role as UserRole, trackerId: `user:${claims.sub}` };
  }
}
