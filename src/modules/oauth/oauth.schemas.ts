import { named, nullable, object, stringArray, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { toolRestrictionFields } from '../api-keys/api-keys.schemas.js';

export const OAuthGrantSchema = named(
  'OAuthGrant',
  object({
    id: uuid,
    clientId: { type: 'string' },
    clientName: { type: 'string' },
    scopes: stringArray,
    projectIds: nullable({ type: 'array', items: uuid }),
    repos: nullable(stringArray),
    confirmWrites: { type: 'boolean' },
    ...toolRestrictionFields,
    allowedIps: { ...nullable(stringArray), description: 'CIDR ranges the app may call from (null: anywhere)' },
    createdAt: timestamp,
    expiresAt: nullable(timestamp),
    lastUsedAt: nullable(timestamp),
    callCount: { type: 'integer', minimum: 0 },
  }),
);

export const AuthorizeAnswerSchema = object({
  redirectTo: {
    type: 'string',
    format: 'uri',
    description: 'The redirect URI with code, state and iss (RFC 9207), or error=access_denied with state and iss',
  },
});
export const RevokedGrantSchema = object({ id: uuid, revoked: { const: true } });

/** RFC 6749 §5.2 error body of the authorization server's endpoints. */
export const OAuthErrorSchema = named(
  'OAuthError',
  object(
    {
      error: {
        type: 'string',
        examples: [
          'invalid_request',
          'invalid_client',
          'invalid_grant',
          'unsupported_grant_type',
          'invalid_scope',
          'invalid_redirect_uri',
          'too_many_requests',
          'server_error',
        ],
      },
      error_description: { type: 'string' },
    },
    ['error_description'],
  ),
);

export const ProtectedResourceMetadataSchema = named('ProtectedResourceMetadata', {
  ...object({
    resource: { type: 'string', format: 'uri' },
    authorization_servers: { type: 'array', items: { type: 'string', format: 'uri' } },
    scopes_supported: stringArray,
    bearer_methods_supported: stringArray,
  }),
  description: 'RFC 9728 protected resource metadata of the MCP endpoint',
});

export const AuthorizationServerMetadataSchema = named('AuthorizationServerMetadata', {
  ...object({
    issuer: { type: 'string', format: 'uri' },
    authorization_endpoint: { type: 'string', format: 'uri' },
    token_endpoint: { type: 'string', format: 'uri' },
    registration_endpoint: { type: 'string', format: 'uri' },
    revocation_endpoint: { type: 'string', format: 'uri' },
    response_types_supported: stringArray,
    grant_types_supported: stringArray,
    code_challenge_methods_supported: stringArray,
    token_endpoint_auth_methods_supported: stringArray,
    scopes_supported: stringArray,
    client_id_metadata_document_supported: { type: 'boolean' },
    authorization_response_iss_parameter_supported: {
      type: 'boolean',
      description: 'RFC 9207: authorization responses carry iss',
    },
  }),
  description: 'RFC 8414 authorization server metadata',
});

export const ClientRegistrationRequestSchema = named('ClientRegistrationRequest', {
  type: 'object',
  description: 'RFC 7591 dynamic client registration',
  required: ['redirect_uris'],
  properties: {
    redirect_uris: {
      type: 'array',
      minItems: 1,
      items: { type: 'string' },
      description: 'https, http on loopback, or a private-use scheme',
    },
    client_name: { type: 'string' },
    token_endpoint_auth_method: { type: 'string', enum: ['none', 'client_secret_basic', 'client_secret_post'] },
    grant_types: { type: 'array', items: { type: 'string', enum: ['authorization_code', 'refresh_token'] } },
    response_types: { type: 'array', items: { const: 'code' } },
  },
});

export const RegisteredClientSchema = named(
  'RegisteredClient',
  object(
    {
      client_id: { type: 'string' },
      client_secret: { type: 'string', description: 'Confidential clients only, shown once' },
      client_secret_expires_at: { const: 0 },
      client_id_issued_at: { type: 'integer' },
      client_name: { type: ['string', 'null'] },
      redirect_uris: stringArray,
      token_endpoint_auth_method: { type: 'string' },
      grant_types: stringArray,
      response_types: stringArray,
    },
    ['client_secret', 'client_secret_expires_at'],
  ),
);

export const TokenRequestSchema = named('TokenRequest', {
  type: 'object',
  required: ['grant_type'],
  properties: {
    grant_type: { type: 'string', enum: ['authorization_code', 'refresh_token'] },
    code: { type: 'string' },
    redirect_uri: { type: 'string' },
    code_verifier: { type: 'string', description: 'PKCE (S256) verifier of the authorization request' },
    refresh_token: { type: 'string' },
    client_id: { type: 'string' },
    client_secret: { type: 'string', description: 'client_secret_post clients' },
    resource: { type: 'string', format: 'uri' },
    scope: { type: 'string' },
  },
});

export const TokenResponseSchema = named(
  'TokenResponse',
  object({
    access_token: { type: 'string', pattern: '^ato_' },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer' },
    refresh_token: { type: 'string', pattern: '^atf_' },
    scope: { type: 'string' },
  }),
);

export const RevokeRequestSchema = named('RevokeRequest', {
  type: 'object',
  required: ['token'],
  properties: {
    token: { type: 'string', description: 'An access (ato_…) or refresh (atf_…) token' },
    token_type_hint: { type: 'string' },
    client_id: { type: 'string' },
    client_secret: { type: 'string' },
  },
});
