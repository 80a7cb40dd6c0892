import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import type { Caller } from '../../../common/auth/caller.js';
import { isUuid } from '../../../common/validation/uuid.js';
import { CredentialKind, type Authenticated, type CredentialPlugin } from '../../credentials/credential-kind.js';
import type { AccessTokenClaims } from '../auth.service.js';
import type { UserPrincipal, UserRole } from '../principal.js';
import { UsersService } from '../users.service.js';

type Claims = AccessTokenClaims & { exp?: number };

/**
 * A user access token (a JWT from POST /api/auth/login): every backend route, no tool door. It has no prefix, so it
 * takes every bearer no other kind claims; it has no id (the audit log names it by its user only).
 */
@Injectable()
@CredentialKind()
export class UserTokenCredential implements CredentialPlugin {
  readonly name = 'user-token';
  readonly via = 'user_token';
  readonly prefixes = [];
  readonly takesUnprefixed = true;
  readonly doors = { backend: 'every-route' } as const;
  readonly invalidMessage = 'The access token is invalid or has expired; log in again';

  constructor(
    private readonly jwt: JwtService,
    private readonly users: UsersService,
  ) {}

  describe(token: string): string {
    return token.split('.').length === 3 ? 'a user access token' : 'an unrecognised credential';
  }

  wrongDoor(): string {
    return 'User access tokens work only on the backend routes under /api';
  }

  async authenticate(token: string): Promise<Authenticated | null> {
    const found = await this.verify(token);
    if (!found) return null;
    const { principal } = found;
    return { caller: callerOfUser(principal.userId, principal.role), user: principal };
  }

  async liveness(token: string): Promise<{ expiresAt: Date } | null> {
    const found = await this.verify(token);
    return found && typeof found.claims.exp === 'number' ? { expiresAt: new Date(found.claims.exp * 1000) } : null;
  }

  /**
   * A well-signed, unexpired token still names a user who must exist now (a token whose subject is unknown, or not
   * even a uuid, is a 401, never a 500 further down), and carries that user's current role: a demoted admin loses
   * admin routes at once, not when the token expires. A failed user lookup (database down) throws: not a 401.
   */
  private async verify(token: string): Promise<{ principal: UserPrincipal; claims: Claims } | null> {
    let claims: Claims;
    try {
      claims = await this.jwt.verifyAsync<Claims>(token, { algorithms: ['HS256'] });
    } catch {
      return null; // expired, malformed or not ours
    }
    if (claims.typ !== 'access' || typeof claims.sub !== 'string' || !isUuid(claims.sub)) return null;
    const user = await this.users.findById(claims.sub);
    if (!user) return null;
    return { principal: { kind: 'user', userId: user.id, role: user.role, trackerId: `user:${user.id}` }, claims };
  }
}

/** A signed-in user's caller: unpinned, no tool scopes, its own budget; an admin user's holds the admin routes. */
export function callerOfUser(userId: string, role: UserRole): Caller {
  return {
    ...(role === 'admin' ? { admin: true as const } : {}),
    kind: 'user-token',
    via: 'user_token',
    credentialId: null,
    userId,
    actor: { userId, projectIds: null, repos: null },
    scopes: [],
    confirmWrites: false,
    expiresAt: null,
    budgetKey: `user:${userId}`,
  };
}
