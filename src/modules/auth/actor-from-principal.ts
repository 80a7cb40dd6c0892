import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { Principal } from './principal.js';

/**
 * The one place an Area B caller becomes an Actor. A user acts unpinned; a project session token acts as
 * the user who minted it, pinned to its project and capped at the token's role.
 *
 * `projectId` is the project the request names (route param, query or body), when it names one: a project
 * token naming another project is the wrong credential for that request, so 401, not 404.
 */
export function actorFromPrincipal(principal: Principal, projectId?: string | null): Actor {
  if (principal.kind === 'user') {
    return { userId: principal.userId, projectIds: null, repos: null };
  }
  if (projectId != null && projectId !== principal.projectId) {
    throw new AppException(
      ErrorCode.AuthInvalid,
      'This project session token belongs to another project; use a token of that project or a user access token from POST /api/auth/login',
    );
  }
  return {
    userId: principal.userId,
    projectIds: [principal.projectId],
    repos: [],
    projectRoleCap: principal.tokenRole,
  };
}
