import { Inject, Injectable } from '@nestjs/common';
import {
  CustomOAuthError,
  InvalidClientError,
  InvalidClientMetadataError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Request } from 'express';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { sameHash } from '../api-keys/api-key-format.js';
import { ClientMetadataError, ClientMetadataFetcher } from './client-metadata-fetcher.js';
import {
  generateClientId,
  generateOAuthSecret,
  hashOAuthSecret,
  isWellFormedOAuthSecret,
  REGISTERED_CLIENT_ID_PREFIX,
} from './oauth-secret-format.js';
import { isAllowedRedirectUri } from './redirect-uri.js';
import {
  OAuthClientsRepository,
  type RegisteredOAuthClient,
  type TokenEndpointAuthMethod,
} from './oauth-clients.repository.js';

const AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post'];

/** What the server knows about a client, wherever it came from (registration or a metadata document). */
export type OAuthClient = RegisteredOAuthClient;

/** Thrown when a client_id names no client we can use: the authorize page shows it, never redirects. */
export class UnknownClientError extends Error {}

/**
 * OAuth clients: RFC 7591 dynamic registration (stored; the secret only as an HMAC) and client ID metadata
 * documents (`client_id` is an https URL, resolved by ClientMetadataFetcher, never stored).
 */
@Injectable()
export class OAuthClientsService {
  constructor(
    private readonly clients: OAuthClientsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metadataDocuments: ClientMetadataFetcher,
  ) {}

  /** RFC 7591 §3.2.1 answer; `client_secret` only for confidential clients, shown this once. */
  async register(body: unknown): Promise<Record<string, unknown>> {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new InvalidClientMetadataError('the body must be a JSON object');
    const raw = body as Record<string, unknown>;
    if (!Array.isArray(raw.redirect_uris) || raw.redirect_uris.length === 0 || raw.redirect_uris.length > 20) {
      throw invalidRedirectUri('redirect_uris must list 1 to 20 redirect URIs');
    }
    const bad = raw.redirect_uris.find((uri) => !isAllowedRedirectUri(uri));
    if (bad !== undefined) {
      throw invalidRedirectUri(
        'redirect URIs must be https, http on a loopback host (127.0.0.1, [::1], localhost), or a private-use scheme such as com.example.app:/callback',
      );
    }
    const parsed = OAuthClientMetadataSchema.safeParse(body);
    if (!parsed.success)
      throw new InvalidClientMetadataError(
        parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '),
      );
    const metadata = parsed.data;
    const authMethod = (metadata.token_endpoint_auth_method ?? 'client_secret_basic') as TokenEndpointAuthMethod;
    if (!AUTH_METHODS.includes(authMethod)) {
      throw new InvalidClientMetadataError(`token_endpoint_auth_method must be one of: ${AUTH_METHODS.join(', ')}`);
    }
    const grantTypes = metadata.grant_types ?? ['authorization_code', 'refresh_token'];
    if (!grantTypes.every((type) => type === 'authorization_code' || type === 'refresh_token')) {
      throw new InvalidClientMetadataError('grant_types may contain only authorization_code and refresh_token');
    }
    const responseTypes = metadata.response_types ?? ['code'];
    if (!responseTypes.every((type) => type === 'code'))
      throw new InvalidClientMetadataError('response_types may contain only code');
    const clientName = (metadata.client_name ?? '').trim().slice(0, 200) || 'Unnamed client';
    const clientId = generateClientId();
    const secret = authMethod === 'none' ? undefined : generateOAuthSecret('clientSecret');
    const redirectUris = [...new Set(metadata.redirect_uris)];
    const issuedAt = new Date();
    await this.clients.insert(
      {
        clientId,
        clientName,
        redirectUris,
        authMethod,
        secretHash: secret ? hashOAuthSecret(secret, this.config.secrets.tokenPepper) : null,
      },
      issuedAt,
    );
    return {
      client_id: clientId,
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      client_id_issued_at: Math.floor(issuedAt.getTime() / 1000),
      client_name: clientName,
      redirect_uris: redirectUris,
      token_endpoint_auth_method: authMethod,
      grant_types: grantTypes,
      response_types: ['code'],
    };
  }

  /** The client named by `client_id`; UnknownClientError when there is none (or its document is unusable). */
  async resolve(clientId: unknown): Promise<OAuthClient> {
    if (typeof clientId !== 'string' || clientId === '' || clientId.length > 2000)
      throw new UnknownClientError('client_id is missing');
    if (ClientMetadataFetcher.isMetadataDocumentUrl(clientId)) {
      try {
        const document = await this.metadataDocuments.resolve(clientId);
        return { ...document, authMethod: 'none', secretHash: null };
      } catch (error) {
        throw new UnknownClientError(
          error instanceof ClientMetadataError ? error.message : 'the client metadata document could not be fetched',
        );
      }
    }
    if (!clientId.startsWith(REGISTERED_CLIENT_ID_PREFIX) || clientId.length > 64)
      throw new UnknownClientError('unknown client_id');
    const client = await this.clients.find(clientId);
    if (!client) throw new UnknownClientError('unknown client_id');
    return client;
  }

  /**
   * Client authentication at the token and revocation endpoints (RFC 6749 §2.3): HTTP Basic or
   * `client_secret` in the body for confidential clients, `client_id` alone for public ones.
   * Any failure is `invalid_client` (401).
   */
  async authenticate(request: Request, body: Record<string, unknown>): Promise<OAuthClient> {
    const basic = parseBasicAuth(request.headers.authorization);
    const clientId = basic?.clientId ?? body.client_id;
    if (basic && body.client_id !== undefined && body.client_id !== basic.clientId)
      throw new InvalidClientError('client_id in the body and in the Authorization header differ');
    let client: OAuthClient;
    try {
      client = await this.resolve(clientId);
    } catch {
      throw new InvalidClientError('client authentication failed: unknown client');
    }
    const secret = basic?.secret ?? body.client_secret;
    if (client.authMethod === 'none') {
      if (secret !== undefined && secret !== '')
        throw new InvalidClientError('this is a public client; it has no client secret');
      return client;
    }
    if (!isWellFormedOAuthSecret(secret, 'clientSecret') || !client.secretHash)
      throw new InvalidClientError('client authentication failed');
    if (!sameHash(client.secretHash, hashOAuthSecret(secret, this.config.secrets.tokenPepper)))
      throw new InvalidClientError('client authentication failed');
    return client;
  }
}

function parseBasicAuth(header: string | undefined): { clientId: string; secret: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before being joined.
    return {
      clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')),
    };
  } catch {
    return undefined;
  }
}

/** RFC 7591 §3.2.2 `invalid_redirect_uri` (the SDK has no class of its own for it). */
function invalidRedirectUri(message: string): CustomOAuthError {
  return new CustomOAuthError('invalid_redirect_uri', message);
}
