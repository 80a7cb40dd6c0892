import type { RequestHandler } from 'express';
import helmet from 'helmet';

/** Whether PUBLIC_URL, the address users reach this server at, is served over TLS. */
export function servedOverHttps(publicUrl: string): boolean {
  return new URL(publicUrl).protocol === 'https:';
}

/**
 * Helmet's response headers for every route (account page, consent page, Swagger UI, the APIs).
 * HSTS and CSP `upgrade-insecure-requests` are sent only when PUBLIC_URL is https: on a plain-http host the
 * browser would otherwise fetch every style and script from an https origin that does not exist, and the
 * pages would render blank (loopback is exempt from the upgrade, which is why it only shows on a LAN address).
 * Cross-Origin-Opener-Policy likewise: browsers ignore it on a plain-http origin and log a console error for it.
 */
export function securityHeaders(publicUrl: string): RequestHandler {
  const https = servedOverHttps(publicUrl);
  return helmet({
    contentSecurityPolicy: {
      directives: {
        // The account page, the consent page and the API docs load only same-origin scripts and styles.
        'script-src': ["'self'"],
        'style-src': ["'self'", "'unsafe-inline'"],
        'upgrade-insecure-requests': https ? [] : null,
      },
    },
    strictTransportSecurity: https,
    crossOriginOpenerPolicy: https,
  }) as RequestHandler;
}
