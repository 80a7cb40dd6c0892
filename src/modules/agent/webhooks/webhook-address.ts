import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppException } from '../../../common/errors/app.exception.js';

/**
 * SSRF guard for run webhooks: `https` to public addresses only, unless WEBHOOK_ALLOW_PRIVATE=true. Checked
 * when the URL is given (a clear 400) and again on every connection (`publicOnlyLookup`), so a name that
 * resolves to a public address at execute time and to 127.0.0.1 later ("DNS rebinding") is refused.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

function refuse(message: string): AppException {
  return AppException.validation(message, [{ field: 'webhookUrl', message }]);
}

/** 400 unless the URL is acceptable and every address its host resolves to is public (or private is allowed). */
export async function assertWebhookUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('webhookUrl must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw refuse('webhookUrl must use https');
  if (url.username || url.password) throw refuse('webhookUrl must not carry credentials');
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await new Promise<LookupAddress[]>((resolve, reject) => dnsLookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found))))).map((a) => a.address);
    } catch {
      throw refuse('webhookUrl host does not resolve');
    }
  }
  if (addresses.length === 0 || !addresses.every(isPublicAddress)) throw refuse('webhookUrl must point to a public address');
  return url;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http(s).request that refuses private addresses at connect time. */
export function publicOnlyLookup(allowPrivate: boolean) {
  return (hostname: string, options: object, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, found) => {
      if (error) return callback(error, []);
      const usable = allowPrivate ? found : found.filter((a) => isPublicAddress(a.address));
      if (usable.length === 0) {
        const refused: NodeJS.ErrnoException = new Error(`webhook address of ${hostname} is not public`);
        refused.code = 'EADDRNOTPUBLIC';
        return callback(refused, []);
      }
      if ((options as { all?: boolean }).all) return callback(null, usable);
      callback(null, usable[0].address, usable[0].family);
    });
  };
}
