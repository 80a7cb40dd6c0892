import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { judgeAddress } from './outbound-address.js';

/** Why an outbound URL was refused; callers turn it into their own 400 (or error page) with this message. */
export class OutboundUrlError extends Error {
  /** Node's socket error code when it ends a connection attempt (`lookup` failure). */
  readonly code = 'EADDRNOTPUBLIC';
  constructor(
    message: string,
    readonly reason: 'url' | 'scheme' | 'credentials' | 'unresolvable' | 'not_public',
  ) {
    super(message);
  }
}

export interface OutboundPolicy {
  /** `true` only by an explicit deployment switch (WEBHOOK_ALLOW_PRIVATE, OAUTH_ALLOW_PRIVATE_CLIENT_METADATA). */
  allowPrivate: boolean;
  /** What the URL is called in messages (`webhookUrl`, `client_id`). */
  label: string;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * The `lookup` for every outbound connection to a user-supplied address: it resolves the name and keeps only
 * allowed addresses, so the check is on the address the socket actually connects to (a name that resolves to a
 * public address when the URL is accepted and to 127.0.0.1 later cannot pass).
 */
export function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, found: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const usable = policy.allowPrivate ? found : found.filter((a) => judgeAddress(a.address).allowed);
      if (usable.length === 0)
        return callback(
          new OutboundUrlError(
            `${policy.label} host ${hostname} resolves to a private or special-purpose address`,
            'not_public',
          ),
          '',
          0,
        );
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      callback(null, usable[0].address, usable[0].family);
    });
  };
}

/**
 * The synchronous part of the rule (scheme, credentials, an address literal, which `lookup` never sees because the
 * socket connects to a literal directly). `https` only; `http` also with the allow-private switch (development).
 */
export function checkOutboundUrl(raw: string | URL, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    throw new OutboundUrlError(`${policy.label} must be an absolute URL`, 'url');
  }
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:'))
    throw new OutboundUrlError(`${policy.label} must use https`, 'scheme');
  if (url.username || url.password)
    throw new OutboundUrlError(`${policy.label} must not carry credentials`, 'credentials');
  const host = hostOf(url);
  if (!policy.allowPrivate && isIP(host)) {
    const verdict = judgeAddress(host);
    if (!verdict.allowed)
      throw new OutboundUrlError(
        `${policy.label} points to a private or special-purpose address (${verdict.range})`,
        'not_public',
      );
  }
  return url;
}

/**
 * `checkOutboundUrl` plus a resolution of the name now, for a clear 400 when the URL is given. Not a substitute for
 * `guardedLookup` at connect time: DNS may answer differently then.
 */
export async function checkOutboundUrlResolving(raw: string | URL, policy: OutboundPolicy): Promise<URL> {
  const url = checkOutboundUrl(raw, policy);
  const host = hostOf(url);
  if (policy.allowPrivate || isIP(host)) return url;
  let addresses: LookupAddress[];
  try {
    addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
      dnsLookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found))),
    );
  } catch {
    throw new OutboundUrlError(`${policy.label} host does not resolve`, 'unresolvable');
  }
  const refused = addresses.map((a) => judgeAddress(a.address)).find((verdict) => !verdict.allowed);
  if (addresses.length === 0 || refused)
    throw new OutboundUrlError(
      `${policy.label} must point to a public address${refused && !refused.allowed ? ` (${refused.range})` : ''}`,
      'not_public',
    );
  return url;
}

/** Options for `http(s).request` to a URL that passed `checkOutboundUrl`: the guarded lookup, no agent reuse across policies. */
export function outboundRequestOptions(policy: OutboundPolicy): { lookup: LookupFunction } {
  return { lookup: guardedLookup(policy) };
}
