import { InvalidRequestError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { NextFunction, Request, Response } from 'express';
import { urlencoded } from 'express';

const FORM_ERROR = Symbol('atrium:form-error');
const parse = urlencoded({ extended: false, limit: '64kb', parameterLimit: 50 });

/**
 * `application/x-www-form-urlencoded` bodies for the token and revocation endpoints (the app parses
 * only JSON). A parse failure is remembered and reported by the route as an RFC 6749 invalid_request,
 * instead of reaching the app-wide error handler in the Area B shape.
 */
export function formBodyMiddleware(request: Request, response: Response, next: NextFunction): void {
  parse(request, response, (error?: unknown) => {
    if (error) (request as Request & { [FORM_ERROR]?: unknown })[FORM_ERROR] = error;
    next();
  });
}

/** The parsed form; invalid_request when the body was not a readable form. Repeated parameters are refused. */
export function formBody(request: Request): Record<string, unknown> {
  if ((request as Request & { [FORM_ERROR]?: unknown })[FORM_ERROR])
    throw new InvalidRequestError('the body could not be read as a form');
  if (!request.is('application/x-www-form-urlencoded'))
    throw new InvalidRequestError('the body must be application/x-www-form-urlencoded');
  const body = request.body as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object')
    throw new InvalidRequestError('the body must be application/x-www-form-urlencoded');
  for (const [name, value] of Object.entries(body)) {
    if (typeof value !== 'string') throw new InvalidRequestError(`${name} is given more than once`);
  }
  return body;
}
