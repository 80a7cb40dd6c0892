import { named, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';

export const UserSchema = named(
  'User',
  object({
    id: uuid,
    email: { type: 'string', format: 'email' },
    name: { type: 'string' },
    role: {
      type: 'string',
      enum: ['admin', 'member'],
      description: 'The first user ever, and ADMIN_EMAIL at start-up, are admins',
    },
    createdAt: timestamp,
  }),
);

export const LoginResultSchema = named(
  'LoginResult',
  object({
    accessToken: { type: 'string', description: 'JWT: Authorization: Bearer <accessToken> on Area B' },
    tokenType: { const: 'Bearer' },
    expiresIn: { type: 'integer', description: 'Seconds until the token expires' },
    user: UserSchema,
  }),
);

export const SignupStateSchema = object({ open: { type: 'boolean', description: 'false when AUTH_SIGNUP=closed' } });
