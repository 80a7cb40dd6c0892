import type { Response } from 'express';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Writes a JSON answer the way Express's `res.json` would (same Content-Type, Content-Length from Node),
 * without its ETag: Express hashes every body it sends (SHA-1 of the whole JSON) so a conditional GET can
 * get a 304, which a POST answer never can, so on a tool result that hash is pure cost.
 * For handlers that answer themselves (`@Res()`), e.g. the tool-call route.
 */
export function sendJson(response: Response, status: number, body: unknown): void {
  response.statusCode = status;
  response.setHeader('Content-Type', JSON_CONTENT_TYPE);
  response.end(JSON.stringify(body));
}

const OPEN_RESULT = Buffer.from('{"result":');
const CLOSE_RESULT = Buffer.from('}');

/**
 * `{"result": <json>}` (200) for a result that is already JSON text (a list PostgreSQL wrote). The text goes out
 * as one Buffer between two constant ones, in one socket write (Node corks a response's writes within a tick):
 * wrapping it in a string and ending with that copied the list twice more on the young heap (the wrapped string,
 * then the header and body joined) on every call.
 */
export function sendJsonResult(response: Response, resultJson: string): void {
  sendJsonChunks(response, [OPEN_RESULT, Buffer.from(resultJson, 'utf8'), CLOSE_RESULT]);
}

/** A 200 JSON answer written as the Buffers it was built from, in one socket write (see sendJsonResult). */
export function sendJsonChunks(
  response: Response,
  chunks: readonly Buffer[],
  contentType: string = JSON_CONTENT_TYPE,
): void {
  let length = 0;
  for (const chunk of chunks) length += chunk.length;
  response.statusCode = 200;
  response.setHeader('Content-Type', contentType);
  response.setHeader('Content-Length', length);
  const last = chunks.length - 1;
  for (let index = 0; index < last; index += 1) response.write(chunks[index]);
  response.end(chunks[last]);
}
