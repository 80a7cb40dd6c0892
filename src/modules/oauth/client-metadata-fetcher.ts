import { Inject, Injectable } from '@nestjs/common';
import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
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
 * Addresses a server-side fetch must never reach: loopback, private, link-local, CGNAT, multicast, reserved.
 * No `::ffff:0:0/96` rule: BlockList matches IPv4 addresses against IPv4-mapped IPv6 rules, so that rule
 * would block every IPv4 address; mapped addresses are unwrapped and judged as IPv4 instead.
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) NON_PUBLIC.addSubnet(network, prefix, 'ipv6');

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6 && address.toLowerCase().startsWith('::ffff:')) {
    // IPv4-mapped: judge the IPv4 address inside.
    const v4 = address.slice(7);
    if (isIP(v4) === 4) return !NON_PUBLIC.check(v4, 'ipv4');
  }
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Fetches client ID metadata documents (a `client_id` that is an https URL) with an SSRF guard: the
 * address is checked when the socket connects (inside DNS lookup of the connection itself, so a name
 * that resolves to a public address for a check and a private one for the fetch cannot slip through),
 * redirects are not followed, the body is capped at 64 KiB and the whole fetch at 5 s. Documents are
 * cached for 5 minutes (failures too, for 30 s, so a slow host is not hammered).
 * Hand-written on node:http because Node's fetch cannot check the connected address per connection
 * without an extra dispatcher dependency; this is a few dozen lines.
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
      value = error instanceof ClientMetadataError ? error : new ClientMetadataError('the client metadata document could not be fetched');
    }
    if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(clientId, { until: Date.now() + (value instanceof ClientMetadataError ? 30_000 : CACHE_TTL_MS), value });
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
    const allowPrivate = this.config.oauth.allowPrivateClientMetadata;
    // https only; plain http only in the development mode that also allows private addresses.
    if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
      throw new ClientMetadataError('a client_id URL must use https');
    }
    if (url.hash || url.username || url.password || url.pathname === '/') {
      throw new ClientMetadataError('a client_id URL must have a path and no fragment or credentials');
    }
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(literal) && !allowPrivate && !isPublicAddress(literal)) {
      throw new ClientMetadataError('the client_id URL points to a private or loopback address');
    }
    const body = await this.get(url, allowPrivate);
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch {
      throw new ClientMetadataError('the client metadata document is not JSON');
    }
    const parsed = OAuthClientMetadataSchema.safeParse(document);
    if (!parsed.success || (document as { client_id?: unknown }).client_id !== clientId) {
      throw new ClientMetadataError('the client metadata document is not valid (it must name itself as client_id and list redirect_uris)');
    }
    const redirectUris = parsed.data.redirect_uris;
    if (redirectUris.length === 0 || !redirectUris.every(isAllowedRedirectUri)) {
      throw new ClientMetadataError('the client metadata document lists a redirect URI that is not allowed');
    }
    return { clientId, clientName: (parsed.data.client_name ?? url.hostname).slice(0, 200), redirectUris };
  }

  private get(url: URL, allowPrivate: boolean): Promise<string> {
    const guardedLookup: LookupFunction = (hostname, options, callback) => {
      dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
        if (error) return callback(error, '', 0);
        const usable = addresses.filter((a) => allowPrivate || isPublicAddress(a.address));
        if (usable.length === 0) return callback(new ClientMetadataError('the client_id host resolves to a private or loopback address'), '', 0);
        if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
        callback(null, usable[0].address, usable[0].family);
      });
    };
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<string>((resolve, reject) => {
      const request = client.get(url, { lookup: guardedLookup, headers: { accept: 'application/json' }, timeout: FETCH_TIMEOUT_MS }, (response) => {
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
      });
      // One deadline for the whole fetch (connect, headers and body), not just socket inactivity.
      const deadline = setTimeout(() => {
        request.destroy();
        reject(new ClientMetadataError('the client metadata document took too long'));
      }, FETCH_TIMEOUT_MS);
      request.on('close', () => clearTimeout(deadline));
      request.on('timeout', () => request.destroy(new ClientMetadataError('the client metadata document took too long')));
      request.on('error', (error) => reject(error instanceof ClientMetadataError ? error : new ClientMetadataError('the client metadata document could not be fetched')));
    });
  }
}
