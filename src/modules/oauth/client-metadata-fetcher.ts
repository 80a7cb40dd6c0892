import { Inject, Injectable } from '@nestjs/common';
import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import http from 'node:http';
import https from 'node:https';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import {
  checkOutboundUrl,
  guardedLookup,
  OutboundUrlError,
  type OutboundPolicy,
} from '../../common/net/outbound-guard.js';
import { isAllowedRedirectUri } from './redirect-uri.js';

/** A client known from its metadata document (client ID metadata documents, MCP authorization 2025-11-25). */
export interface MetadataDocumentClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
}

export class ClientMetadataError extends Error {}

const MAX_DOCUMENT_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
const CACHE_TTL_MS = 5 * 60_000;
const CACHE_MAX_ENTRIES = 500;

/**
 * Fetches client ID metadata documents (a `client_id` that is an https URL) with an SSRF guard: the
 * address is checked when the socket connects (inside DNS lookup of the connection itself, so a name
 * that resolves to a public address for a check and a private one for the fetch cannot slip through),
 * redirects are not followed, the body is capped at 64 KiB and the whole fetch at 5 s. Documents are
 * cached for 5 minutes (failures too, for 30 s, so a slow host is not hammered).
 * On node:http so the connection's own `lookup` is the shared outbound guard (src/common/net).
 */
@Injectable()
export class ClientMetadataFetcher {
  private readonly cache = new Map<string, { until: number; value: MetadataDocumentClient | ClientMetadataError }>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  static isMetadataDocumentUrl(clientId: string): boolean {
    return /^https?:\/\//i.test(clientId);
  }

  async resolve(clientId: string): Promise<MetadataDocumentClient> {
    const cached = this.cache.get(clientId);
    if (cached && cached.until > Date.now()) {
      if (cached.value instanceof ClientMetadataError) throw cached.value;
      return cached.value;
    }
    let value: MetadataDocumentClient | ClientMetadataError;
    try {
      value = await this.fetchDocument(clientId);
    } catch (error) {
      value =
        error instanceof ClientMetadataError
          ? error
          : new ClientMetadataError('the client metadata document could not be fetched');
    }
    if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(clientId, {
      until: Date.now() + (value instanceof ClientMetadataError ? 30_000 : CACHE_TTL_MS),
      value,
    });
    if (value instanceof ClientMetadataError) throw value;
    return value;
  }

  private async fetchDocument(clientId: string): Promise<MetadataDocumentClient> {
    let url: URL;
    try {
      url = new URL(clientId);
    } catch {
      throw new ClientMetadataError('client_id is not a valid URL');
    }
    const policy: OutboundPolicy = {
      allowPrivate: this.config.oauth.allowPrivateClientMetadata,
      label: 'the client_id URL',
    };
    try {
      // https only (plain http only with the allow-private development switch); an address literal is judged here.
      checkOutboundUrl(url, policy);
    } catch (error) {
      throw new ClientMetadataError(
        error instanceof OutboundUrlError ? error.message : 'the client_id URL is not allowed',
      );
    }
    if (url.hash || url.pathname === '/') {
      throw new ClientMetadataError('a client_id URL must have a path and no fragment or credentials');
    }
    const body = await this.get(url, policy);
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch {
      throw new ClientMetadataError('the client metadata document is not JSON');
    }
    const parsed = OAuthClientMetadataSchema.safeParse(document);
    if (!parsed.success || (document as { client_id?: unknown }).client_id !== clientId) {
      throw new ClientMetadataError(
        'the client metadata document is not valid (it must name itself as client_id and list redirect_uris)',
      );
    }
    const redirectUris = parsed.data.redirect_uris;
    if (redirectUris.length === 0 || !redirectUris.every(isAllowedRedirectUri)) {
      throw new ClientMetadataError('the client metadata document lists a redirect URI that is not allowed');
    }
    return { clientId, clientName: (parsed.data.client_name ?? url.hostname).slice(0, 200), redirectUris };
  }

  private get(url: URL, policy: OutboundPolicy): Promise<string> {
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<string>((resolve, reject) => {
      const request = client.get(
        url,
        { lookup: guardedLookup(policy), headers: { accept: 'application/json' }, timeout: FETCH_TIMEOUT_MS },
        (response) => {
          if (response.statusCode !== 200) {
            response.resume();
            reject(new ClientMetadataError(`the client metadata document answered HTTP ${response.statusCode}`));
            return;
          }
          const declared = Number(response.headers['content-length'] ?? 0);
          if (declared > MAX_DOCUMENT_BYTES) {
            request.destroy();
            reject(new ClientMetadataError('the client metadata document is too large'));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_DOCUMENT_BYTES) {
              request.destroy();
              reject(new ClientMetadataError('the client metadata document is too large'));
              return;
            }
            chunks.push(chunk);
          });
          response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          response.on('error', () => reject(new ClientMetadataError('the client metadata document could not be read')));
        },
      );
      // One deadline for the whole fetch (connect, headers and body), not just socket inactivity.
      const deadline = setTimeout(() => {
        request.destroy();
        reject(new ClientMetadataError('the client metadata document took too long'));
      }, FETCH_TIMEOUT_MS);
      request.on('close', () => clearTimeout(deadline));
      request.on('timeout', () =>
        request.destroy(new ClientMetadataError('the client metadata document took too long')),
      );
      request.on('error', (error) =>
        reject(
          error instanceof ClientMetadataError
            ? error
            : new ClientMetadataError(
                error instanceof OutboundUrlError ? error.message : 'the client metadata document could not be fetched',
              ),
        ),
      );
    });
  }
}
