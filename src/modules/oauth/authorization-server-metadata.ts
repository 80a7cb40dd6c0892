import type { OAuthMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { AppConfig } from '../../config/app-config.js';

export type AuthorizationServerMetadata = OAuthMetadata & {
  client_id_metadata_document_supported: boolean;
  authorization_response_iss_parameter_supported: boolean;
};

/**
 * RFC 8414 metadata of Atrium's authorization server. Served at /.well-known/oauth-authorization-server
 * (`scopes`: the ScopeCatalog's names) and read by the OpenAPI document for its OAuth 2 security scheme, so the two never name different URLs.
 */
export function authorizationServerMetadata(config: AppConfig, scopes: readonly string[]): AuthorizationServerMetadata {
  const base = config.publicUrl;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    scopes_supported: [...scopes],
    client_id_metadata_document_supported: true,
    // RFC 9207: every authorization response names its issuer, so a client talking to several servers cannot be mixed up.
    authorization_response_iss_parameter_supported: true,
  };
}
