import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-custom';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { bearerToken } from '../auth/guards/backend-auth.guard.js';
import { API_KEY_PREFIX } from './api-key-format.js';
import type { ApiKeyPrincipal } from './api-key.principal.js';
import { ApiKeysService } from './api-keys.service.js';

export const API_KEY_STRATEGY = 'api-key';

/** `Authorization: Bearer atr_…` → the key's principal; any other credential is a 401 naming the one expected. */
@Injectable()
export class ApiKeyStrategy extends PassportStrategy(Strategy, API_KEY_STRATEGY) {
  constructor(private readonly apiKeys: ApiKeysService) {
    super();
  }

  async validate(request: Request): Promise<ApiKeyPrincipal> {
    const token = bearerToken(request);
    if (!token) {
      throw new AppException(ErrorCode.MissingApiKey, 'This route needs a personal API key: Authorization: Bearer atr_… (create one with POST /api/api-keys)');
    }
    if (!token.startsWith(API_KEY_PREFIX)) {
      const kind = token.startsWith('atp_') ? 'a project session token' : token.split('.').length === 3 ? 'a user access token' : 'an unrecognised credential';
      throw new AppException(
        ErrorCode.InvalidApiKey,
        `This route expects a personal API key (atr_…), got ${kind}; user and project tokens work only on the backend routes under /api`,
      );
    }
    return this.apiKeys.authenticate(token);
  }
}
