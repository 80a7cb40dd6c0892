import type { NextFunction, Request, Response } from 'express';
import { AppException } from '../errors/app.exception.js';
import { ErrorCode } from '../errors/error-code.js';

/** Deeper than any body the API takes (tool arguments, JSON-RPC params): far below what overflows the stack. */
export const MAX_JSON_DEPTH = 64;

/** U+0000 (PostgreSQL text cannot hold it) or a UTF-16 surrogate without its partner (not encodable as UTF-8). */
const NOT_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Returns why a parsed JSON body is refused, or null. Iterative (an explicit stack), so a hostile
 * 10,000-level body cannot overflow the stack here, and it stops before validation and class-transformer
 * (both recursive) ever see it.
 */
export function jsonBodyProblem(body: unknown, maxDepth = MAX_JSON_DEPTH): string | null {
  const stack: [unknown, number][] = [[body, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (NOT_TEXT.test(value))
        return 'Strings in the body must be Unicode text without NUL characters or unpaired surrogates';
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth > maxDepth) return `The body is nested more than ${maxDepth} levels deep`;
    if (Array.isArray(value)) {
      for (const item of value) stack.push([item, depth + 1]);
    } else {
      for (const [key, item] of Object.entries(value)) {
        if (NOT_TEXT.test(key))
          return 'Keys in the body must be Unicode text without NUL characters or unpaired surrogates';
        stack.push([item, depth + 1]);
      }
    }
  }
  return null;
}

/** Express middleware, mounted right after the JSON body parser: 400 invalid_request / VALIDATION_FAILED. */
export function jsonBodyGuard(req: Request, _res: Response, next: NextFunction): void {
  const problem = req.body === undefined ? null : jsonBodyProblem(req.body);
  next(problem ? new AppException(ErrorCode.InvalidRequest, problem) : undefined);
}
