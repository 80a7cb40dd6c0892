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

/** `{"result":`, the opening of every tool-call answer written in pieces (see sendJsonChunks). */
export const OPEN_RESULT = Buffer.from('{"result":');
const CLOSE_RESULT = Buffer.from('}');

/**
 * `{"result": <json>}` (200) for a result that is already JSON text (a list PostgreSQL wrote), in one socket write
 * (Node corks a response's writes within a tick) without copying the list on the way (see sendJsonChunks).
 */
export function sendJsonResult(response: Response, resultJson: string): void {
  sendJsonChunks(response, [OPEN_RESULT, resultJson, CLOSE_RESULT]);
}

/**
 * A 200 JSON answer written as the pieces it was built from, in one socket write. Large pieces stay strings: the
 * socket's writev encodes them straight into its own storage, where a `Buffer.from` per piece allocated an
 * ArrayBuffer whose external memory V8 counts towards its next full collection, and joining them in one string copied
 * the answer on the young heap. The first piece must be a Buffer, or Node prepends the headers to it as a string.
 */
export function sendJsonChunks(
  response: Response,
  chunks: readonly [Buffer, ...(Buffer | string)[]],
  contentType: string = JSON_CONTENT_TYPE,
): void {
  let length = 0;
  for (const chunk of chunks) length += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
  response.statusCode = 200;
  response.setHeader('Content-Type', contentType);
  response.setHeader('Content-Length', length);
  const last = chunks.length - 1;
  for (let index = 0; index < last; index += 1) response.write(chunks[index]);
  response.end(chunks[last]);
}
