import { named, nullable, object, stringArray, timestamp, uuid } from '../../common/openapi/openapi-schema.js';

export const OAuthGrantSchema = named('OAuthGrant', object({
  id: uuid,
  clientId: { type: 'string' },
  clientName: { type: 'string' },
  scopes: stringArray,
  projectIds: nullable({ type: 'array', items: uuid }),
  repos: nullable(stringArray),
  confirmWrites: { type: 'boolean' },
  createdAt: timestamp,
  expiresAt: nullable(timestamp),
  lastUsedAt: nullable(timestamp),
  callCount: { type: 'integer', minimum: 0 },
}));

export const AuthorizeAnswerSchema = object({ redirectTo: { type: 'string', format: 'uri', description: 'The redirect URI with code and state, or error=access_denied' } });
export const RevokedGrantSchema = object({ id: uuid, revoked: { const: true } });
