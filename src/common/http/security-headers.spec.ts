import type { Request, Response } from 'express';
import { securityHeaders } from './security-headers.js';

/** The headers the middleware sets for one request. */
function headersFor(publicUrl: string): Record<string, string> {
  const set: Record<string, string> = {};
  const res = {
    setHeader: (name: string, value: string) => void (set[name.toLowerCase()] = String(value)),
    removeHeader: () => undefined,
  } as unknown as Response;
  securityHeaders(publicUrl)({ method: 'GET', headers: {} } as Request, res, () => undefined);
  return set;
}

describe('securityHeaders', () => {
  it('upgrades to https, sends HSTS and COOP only when PUBLIC_URL is https', () => {
    const https = headersFor('https://atrium.example.com');
    expect(https['content-security-policy']).toContain('upgrade-insecure-requests');
    expect(https['strict-transport-security']).toMatch(/^max-age=\d+/);
    expect(https['cross-origin-opener-policy']).toBe('same-origin');

    for (const url of ['http://192.168.1.20:3000', 'http://localhost:3000', 'http://atrium.internal/prefix']) {
      const http = headersFor(url);
      expect(http['content-security-policy']).not.toContain('upgrade-insecure-requests');
      expect(http['content-security-policy']).toContain("script-src 'self'");
      expect(http['strict-transport-security']).toBeUndefined();
      expect(http['cross-origin-opener-policy']).toBeUndefined();
      expect(http['x-content-type-options']).toBe('nosniff');
    }
  });
});
