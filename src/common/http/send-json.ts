import type { Response } from 'express';

/**
 * Writes a JSON answer the way Express's `res.json` would (same Content-Type, Content-Length from Node),
 * without its ETag: Express hashes every body it sends (SHA-1 of the whole JSON) so a conditional GET can
 * get a 304, which a POST answer never can; on a 50-row tool result that hash was ~25 µs a call.
 * For handlers that answer themselves (`@Res()`), e.g. the tool-call route.
 */
export function sendJson(response: Response, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  response.statusCode = status;
  response.setHeader('Content-Type', 'application/json; charset=utf-8');
  response.end(json);
}
