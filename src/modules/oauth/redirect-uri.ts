import { redirectUriMatches as sdkRedirectUriMatches } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * Which redirect URIs a client may register (API.md, RFC 8252 / OAuth 2.1 §1.5): `https`, `http` on a
 * loopback host (any port), or a private-use scheme of a native app (`com.example.app:/cb`). Never a
 * fragment, never credentials in the URI, never a scheme that runs code in a browser.
 */
export function isAllowedRedirectUri(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2000) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash || value.includes('#') || url.username || url.password) return false;
  if (url.protocol === 'https:') return url.hostname !== '';
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname);
  // Private-use scheme of a native app. RFC 8252 §7.1 recommends reverse-DNS names (com.example.app:/cb)
  // but does not require them, and some clients use a plain one (cursor://…); never one a browser interprets.
  const scheme = url.protocol.slice(0, -1);
  return /^[a-z][a-z0-9+.-]*$/.test(scheme) && !BROWSER_SCHEMES.has(scheme);
}

const BROWSER_SCHEMES = new Set([
  'javascript',
  'data',
  'vbscript',
  'file',
  'blob',
  'about',
  'ftp',
  'ws',
  'wss',
  'mailto',
  'tel',
  'sms',
  'chrome',
  'view-source',
  'intent',
  'filesystem',
]);

/**
 * Requested vs registered: exact, except any port on loopback (RFC 8252 §7.3), the SDK's own rule; but never a URI
 * registration would refuse (credentials or a fragment), which the SDK's loopback comparison does not look at.
 */
export function redirectUriMatches(requested: string, registered: string): boolean {
  if (requested.includes('#') || requested.includes('@')) {
    let url: URL;
    try {
      url = new URL(requested);
    } catch {
      return false;
    }
    if (url.hash || requested.includes('#') || url.username || url.password) return false;
  }
  return sdkRedirectUriMatches(requested, registered);
}
