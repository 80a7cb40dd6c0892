import { request as httpRequest } from 'node:http';

/**
 * Keeps an API instance busy until the returned function is called: one request whose body never ends stays in
 * flight, so the instance spends all of its last second serving and publishes a busy share of 1. Worker-only
 * processes then pace large documents (short batches with pauses, nothing embedded ahead), which is what a test
 * needs when it interrupts a long ingest midway.
 */
export function holdApiBusy(baseUrl: string): () => void {
  const req = httpRequest(`${baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': '1000' },
  });
  req.on('error', () => undefined);
  req.write('{"email":');
  return () => req.destroy();
}
