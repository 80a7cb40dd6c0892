import type { Response } from 'express';

/**
 * Writes a JSON answer the way Express's `res.json` would (same Content-Type, Content-Length from Node),
 * without its ETag: Express hashes every body it sends (SHA-1 of the whole JSON) so a conditional GET can
 * get a 304, which a POST answer never can; on a 50-row tool result that hash was ~25 µs a call.
 * For handlers that answer themselves (`@Res()`), e.g. the tool-call route.
 */
export function sendJson(response: Response, status: number, body: unknown): void {
  sendJsonText(response, status, JSON.stringify(body));
}

/** The same for a body that is already JSON text. */
export function sendJsonText(response: Response, status: number, json: string): void {
  response.statusCode = status;
  response.setHeader('Content-Type', 'application/json; charset=utf-8');
  response.end(json);
}
