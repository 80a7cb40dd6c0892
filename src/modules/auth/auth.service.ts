import { Inject, Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { RateLimiterService } from '../../common/rate-limit/rate-limiter.service.js';
import { CredentialEvents } from '../credentials/credential-events.js';
import type { LoginDto } from './dto/login.dto.js';
import type { RegisterDto } from './dto/register.dto.js';
import { PasswordHasher } from './password-hasher.js';
import { toUserView, UsersService, type UserView } from './users.service.js';

export interface AccessTokenClaims {
  sub: string;
  role: string;
  typ: 'access';
}

// Verifying against this when the email is unknown keeps both failure paths equally slow.
const DUMMY_HASH_PROMISE = PasswordHasher.hash('atrium-timing-equaliser');

@Injectable()
export class AuthService {
  constructor(
    private readonly users: UsersService,
    private readonly jwt: JwtService,
    private readonly rateLimiter: RateLimiterService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly credentialEvents: CredentialEvents,
  ) {}

  signupOpen(): boolean {
    return this.config.auth.signup === 'open';
  }

  async register(input: RegisterDto): Promise<UserView> {
    if (this.config.auth.signup === 'closed') {
      throw new AppException(ErrorCode.Forbidden, 'Sign-up is closed on this installation; ask an administrator');
    }
    return toUserView(await this.users.create(input));
  }

  async login(
    input: LoginDto,
    ip: string,
  ): Promise<{ accessToken: string; tokenType: 'Bearer'; expiresIn: number; user: UserView }> {
    await this.rateLimiter.enforce(
      'backend',
      'login',
      `${ip}|${input.email}`,
      this.config.limits.loginAttemptsPer15Min,
      15 * 60_000,
      'Too many login attempts; wait before trying again',
    );
    const user = await this.users.findByEmailWithPassword(input.email);
    const valid = user
      ? await PasswordHasher.verify(input.password, user.passwordHash)
      : await PasswordHasher.verify(input.password, await DUMMY_HASH_PROMISE).then(() => false);
    if (!user || !valid) {
      // The audit log records it (behind: it changes nothing); the account (when the email names one) sees it in its own log.
      this.credentialEvents.signInRefused({ userId: user?.id ?? null, via: 'user_token', email: input.email, ip });
      throw new AppException(ErrorCode.AuthInvalid, 'Email or password is incorrect');
    }
    const claims: AccessTokenClaims = { sub: user.id, role: user.role, typ: 'access' };
    const accessToken = await this.jwt.signAsync(claims);
    return {
      accessToken,
      tokenType: 'Bearer',
      expiresIn: this.config.auth.accessTokenTtlSeconds,
      user: toUserView(user),
    };
  }

  async me(userId: string): Promise<UserView> {
    const user = await this.users.findById(userId);
    if (!user) throw new AppException(ErrorCode.AuthInvalid, 'The account of this token no longer exists');
    return toUserView(user);
  }
}
