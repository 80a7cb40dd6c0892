import { named, nullable, object, stringArray, timestamp, uuid } from '../../common/openapi/openapi-schema.js';

// `Scope` (the enum of the ScopeCatalog's names) is added by the document builder: the catalog is filled at start-up.
const scopes = { type: 'array', items: { $ref: '#/components/schemas/Scope' } };
const pins = {
  projectIds: {
    ...nullable({ type: 'array', items: uuid }),
    description: 'Projects the key is pinned to (null: not pinned)',
  },
  repos: { ...nullable(stringArray), description: 'Registered repositories the key is pinned to (null: not pinned)' },
};
/** The narrowing within the scopes a tool credential carries (API keys and OAuth grants alike). */
export const toolRestrictionFields = {
  tools: {
    ...nullable(stringArray),
    description: 'Only these tools, within the scopes (null: every tool of the scopes)',
  },
  readOnly: { type: 'boolean', description: 'Only tools marked readOnlyHint: true, whatever the scopes' },
};

const createdKeyFields = {
  id: uuid,
  name: { type: 'string' },
  scopes,
  prefix: { type: 'string', description: 'The first 8 characters after atr_, for display' },
  createdAt: timestamp,
  expiresAt: nullable(timestamp),
  ...pins,
  confirmWrites: { type: 'boolean' },
  ...toolRestrictionFields,
  allowedIps: { ...nullable(stringArray), description: 'CIDR ranges the key may be used from (null: anywhere)' },
  key: {
    type: 'string',
    pattern: '^atr_[0-9A-Za-z]{38}$',
    description: 'The plaintext key, returned this once only',
  },
};

export const CreatedApiKeySchema = named('CreatedApiKey', object(createdKeyFields));

const policyRules = {
  type: 'array',
  items: { type: 'string', enum: ['maxKeyLifetimeDays', 'allowedKeyScopes', 'requireConfirmWritesForWriteScopes'] },
};

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
  ...toolRestrictionFields,
  allowedIps: { ...nullable(stringArray), description: 'CIDR ranges the key may be used from (null: anywhere)' },
  rolledTo: { ...nullable(uuid), description: 'The key that replaced this one by a roll' },
  retiresAt: {
    ...nullable(timestamp),
    description: 'When a rolled key stops working (the end of its overlap); null otherwise',
  },
  outOfPolicy: {
    ...policyRules,
    description: 'The admin policy rules this active key breaks (it keeps working; a new key could not be made so)',
  },
};

export const ApiKeySchema = named('ApiKey', object(keyFields));

export const ApiKeyDetailSchema = named(
  'ApiKeyDetail',
  object({
    ...keyFields,
    recentUsage: {
      type: 'array',
      description: 'The last 50 calls, newest first',
      items: object({
        at: timestamp,
        tool: { type: ['string', 'null'] },
        status: { type: 'integer' },
        durationMs: { type: 'number' },
        clientName: {
          type: ['string', 'null'],
          description: 'The MCP client that made the call, as it named itself (null on the JSON door)',
        },
        clientVersion: { type: ['string', 'null'] },
      }),
    },
  }),
);

export const RolledApiKeySchema = named(
  'RolledApiKey',
  object({
    ...createdKeyFields,
    retiresAt: { ...timestamp, description: 'When the old key stops working' },
  }),
);

export const OutOfPolicyKeySchema = named(
  'OutOfPolicyKey',
  object({
    id: uuid,
    userId: uuid,
    userEmail: { type: 'string' },
    name: { type: 'string' },
    prefix: { type: 'string' },
    scopes,
    confirmWrites: { type: 'boolean' },
    createdAt: timestamp,
    expiresAt: nullable(timestamp),
    outOfPolicy: { ...policyRules, description: 'The admin policy rules the key breaks' },
  }),
);

export const RevokedApiKeySchema = object({
  id: uuid,
  status: { type: 'string', enum: ['active', 'expired', 'revoked'] },
});

export const ScopeViewSchema = named(
  'ScopeView',
  object({
    name: { $ref: '#/components/schemas/Scope' },
    group: { type: 'string', description: 'Heading the account page groups the scope under' },
    access: { type: 'string', enum: ['read', 'write'] },
    allows: { type: 'string', description: 'What a credential with this scope may do' },
    exampleTool: {
      type: ['string', 'null'],
      description: 'A read-only tool of this scope that needs no argument, or null',
    },
  }),
);

export const ScopeCatalogSchema = named('ScopeCatalog', object({ items: { type: 'array', items: ScopeViewSchema } }));
