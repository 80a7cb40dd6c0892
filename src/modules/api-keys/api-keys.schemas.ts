import { named, nullable, object, stringArray, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { API_KEY_SCOPES } from './api-key-scopes.js';

const scopes = { type: 'array', items: { type: 'string', enum: [...API_KEY_SCOPES] } };
const pins = {
  projectIds: { ...nullable({ type: 'array', items: uuid }), description: 'Projects the key is pinned to (null: not pinned)' },
  repos: { ...nullable(stringArray), description: 'Registered repositories the key is pinned to (null: not pinned)' },
};

export const CreatedApiKeySchema = named('CreatedApiKey', object({
  id: uuid,
  name: { type: 'string' },
  scopes,
  prefix: { type: 'string', description: 'The first 8 characters after atr_, for display' },
  createdAt: timestamp,
  expiresAt: nullable(timestamp),
  ...pins,
  confirmWrites: { type: 'boolean' },
  key: { type: 'string', pattern: '^atr_[0-9A-Za-z]{38}$', description: 'The plaintext key, returned this once only' },
}));

const keyFields = {
  id: uuid,
  name: { type: 'string' },
  scopes,
  prefix: { type: 'string' },
  createdAt: timestamp,
  expiresAt: nullable(timestamp),
  daysUntilExpiry: { type: ['integer', 'null'], description: 'null for a key that never expires' },
  lastUsedAt: nullable(timestamp),
  callCount: { type: 'integer', minimum: 0 },
  status: { type: 'string', enum: ['active', 'expired', 'revoked'] },
  ...pins,
  confirmWrites: { type: 'boolean' },
};

export const ApiKeySchema = named('ApiKey', object(keyFields));

export const ApiKeyDetailSchema = named('ApiKeyDetail', object({
  ...keyFields,
  recentUsage: {
    type: 'array',
    description: 'The last 50 calls, newest first',
    items: object({ at: timestamp, tool: { type: ['string', 'null'] }, status: { type: 'integer' }, durationMs: { type: 'number' } }),
  },
}));

export const RevokedApiKeySchema = object({ id: uuid, status: { type: 'string', enum: ['active', 'expired', 'revoked'] } });
