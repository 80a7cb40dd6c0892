import { applyDecorators, Header } from '@nestjs/common';

/**
 * Marks a route whose answer carries a secret shown once (an access token, a key, a session token): no cache
 * between the server and the client may keep it (API.md: `Cache-Control: no-store`).
 */
export function CarriesSecret(): MethodDecorator {
  return applyDecorators(Header('Cache-Control', 'no-store'), Header('Pragma', 'no-cache'));
}
