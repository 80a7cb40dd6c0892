import { named, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { PROJECT_ROLES } from './project-role.js';

const role = { type: 'string', enum: [...PROJECT_ROLES] };

export const ProjectSchema = named('Project', object({
  id: uuid,
  name: { type: 'string' },
  description: { type: 'string' },
  ownerId: uuid,
  role: { ...role, description: "The caller's role in the project" },
  createdAt: timestamp,
  updatedAt: timestamp,
  documentCount: { type: 'integer', minimum: 0 },
  memberCount: { type: 'integer', minimum: 1 },
}));

export const ProjectMemberSchema = named('ProjectMember', object({ projectId: uuid, userId: uuid, role, createdAt: timestamp, updatedAt: timestamp }));

export const ProjectSessionTokenSchema = named('ProjectSessionToken', object({
  id: uuid,
  token: { type: 'string', pattern: '^atp_', description: 'Shown once: Authorization: Bearer atp_… on this project’s routes' },
  expiresAt: timestamp,
}));
