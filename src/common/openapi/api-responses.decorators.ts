import { applyDecorators } from '@nestjs/common';
import { ApiExtension, ApiResponse } from '@nestjs/swagger';
import { envelope, schemaOf, type JsonSchema, type NamedSchema } from './openapi-schema.js';

/**
 * Operation extension naming the error statuses a route answers besides the ones every route of its area
 * can answer (the OpenAPI builder adds those: 400 with input, 401 with a credential, 413 with a JSON body,
 * 429, 500, 503). The builder turns it into responses with the area's error body and removes it.
 */
export const ERRORS_EXTENSION = 'x-atrium-errors';

/** Area B success: the `{success, data, error, traceId}` envelope around `data`. */
export function ApiData(
  status: number,
  data: NamedSchema | JsonSchema,
  description: string,
): MethodDecorator & ClassDecorator {
  return ApiResponse({ status, description, schema: envelope(data) });
}

/** Area A success: a bare body (no envelope). */
export function ApiBareData(
  status: number,
  body: NamedSchema | JsonSchema,
  description: string,
): MethodDecorator & ClassDecorator {
  return ApiResponse({ status, description, schema: schemaOf(body) });
}

/** The route-specific error statuses (e.g. 403 for a role check, 404 for an id, 409 for a state). */
export function ApiErrors(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(ApiExtension(ERRORS_EXTENSION, statuses));
}
