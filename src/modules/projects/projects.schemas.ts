import { named, nullable, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { PROJECT_ROLES } from './project-role.js';

const role = { type: 'string', enum: [...PROJECT_ROLES] };

export const ProjectSchema = named(
  'Project',
  object({
    id: uuid,
    name: { type: 'string' },
    description: { type: 'string' },
    ownerId: uuid,
    role: { ...role, description: "The caller's role in the project" },
    createdAt: timestamp,
    updatedAt: timestamp,
    documentCount: { type: 'integer', minimum: 0 },
    memberCount: { type: 'integer', minimum: 1 },
  }),
);

export const ProjectMemberSchema = named(
  'ProjectMember',
  object({ projectId: uuid, userId: uuid, role, createdAt: timestamp, updatedAt: timestamp }),
);

export const ProjectSessionTokenSchema = named(
  'ProjectSessionToken',
  object({
    id: uuid,
    token: {
      type: 'string',
      pattern: '^atp_',
      description: 'Shown once: Authorization: Bearer atp_… on this project’s routes',
    },
    expiresAt: timestamp,
  }),
);

export const ProjectSessionTokenListItemSchema = named(
  'ProjectSessionTokenListItem',
  object({
    id: uuid,
    name: { type: 'string' },
    role: { type: 'string', enum: ['editor', 'viewer'] },
    prefix: {
      ...nullable({ type: 'string' }),
      description:
        'The first 8 characters after atp_ (null for tokens minted before prefixes were kept); never the token',
    },
    createdAt: timestamp,
    expiresAt: timestamp,
    lastUsedAt: { ...nullable(timestamp), description: 'Recorded at most once a minute per instance' },
    createdBy: uuid,
  }),
);

export const RevokedSessionTokenSchema = named(
  'RevokedSessionToken',
  object({ id: uuid, revoked: { type: 'boolean', const: true } }),
);
