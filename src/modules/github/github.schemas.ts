import { named, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';

export const RegisteredRepoSchema = named(
  'RegisteredRepo',
  object({
    id: uuid,
    fullName: { type: 'string', examples: ['octo-org/octo-repo'] },
    defaultBranch: { type: 'string' },
    description: { type: ['string', 'null'] },
    private: { type: 'boolean' },
    tokenSource: {
      type: 'string',
      enum: ['repository', 'server'],
      description: 'Where the token comes from; the token itself is never returned',
    },
    createdBy: { anyOf: [uuid, { type: 'null' }] },
    createdAt: timestamp,
  }),
);
