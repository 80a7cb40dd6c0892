import { named, nullable, object, stringArray, timestamp, uuid } from '../../common/openapi/openapi-schema.js';

const policyFields = {
  maxKeyLifetimeDays: {
    type: ['integer', 'null'],
    minimum: 1,
    maximum: 3650,
    description: 'Longest lifetime of a new API key in days; null: no limit (never-expiring keys allowed)',
  },
  allowedKeyScopes: { ...nullable(stringArray), description: 'Scopes a new API key may carry; null: all' },
  requireConfirmWritesForWriteScopes: {
    type: 'boolean',
    description: 'A new API key with a write scope must have confirmWrites',
  },
  allowedIps: {
    ...nullable(stringArray),
    description: 'CIDR ranges Area A calls may come from (client address: req.ip under TRUST_PROXY); null: anywhere',
  },
  allowedOAuthClients: {
    ...nullable(stringArray),
    description:
      'OAuth clients that may be authorised: client ID metadata URL hosts, client ids or registered client names; null: any',
  },
  maxCredentialsPerUser: {
    type: 'integer',
    minimum: 1,
    maximum: 100000,
    description: 'Usable API keys and OAuth grants per user (default: MAX_CREDENTIALS_PER_USER)',
  },
};

export const AdminPolicySchema = named(
  'AdminPolicy',
  object({
    ...policyFields,
    updatedAt: { ...nullable(timestamp), description: 'null: never saved (the defaults)' },
    updatedBy: { ...nullable(uuid), description: 'The admin who saved it last' },
  }),
);
