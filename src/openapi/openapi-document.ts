import type { INestApplication } from '@nestjs/common';
import { GUARDS_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { ERRORS_EXTENSION } from '../common/openapi/api-responses.decorators.js';
import {
  BackendErrorBody,
  backendCodesFor,
  namedSchemas,
  ToolApiErrorBody,
  toolApiCodesFor,
  type JsonSchema,
} from '../common/openapi/openapi-schema.js';
import { isMcpEndpoint, isOAuthEndpoint, TOOL_API_PREFIX } from '../common/http/api-area.js';
import type { AppConfig } from '../config/app-config.js';
import { ApiKeyAuthGuard } from '../modules/api-keys/api-key-auth.guard.js';
import { ScopeCatalog } from '../modules/tool-kit/scope-catalog.js';
import { ALLOW_PROJECT_TOKEN } from '../modules/auth/guards/allow-project-token.decorator.js';
import { IS_PUBLIC } from '../modules/auth/guards/public.decorator.js';
import { authorizationServerMetadata } from '../modules/oauth/authorization-server-metadata.js';
import { OAuthErrorSchema } from '../modules/oauth/oauth.schemas.js';
import { TOOLS_EXTENSION, toolOpenApi } from '../modules/tools/tool-openapi.js';
import { ToolsService } from '../modules/tools/tools.service.js';

type Operation = {
  operationId?: string;
  parameters?: unknown[];
  requestBody?: { content?: Record<string, unknown> };
  responses: Record<string, Record<string, unknown>>;
  security?: Record<string, string[]>[];
  [extension: `x-${string}`]: unknown;
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'] as const;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input',
  401: 'No credential, a bad one, or the wrong kind for this route (the message names the one expected)',
  403: 'The credential may not do this (role, scope, admin only, or a confirmation the door cannot ask for)',
  404: 'Not found, or not visible to the caller',
  409: 'Conflict with the current state (duplicate, finished job, Idempotency-Key reused with another body)',
  413: 'Body too large',
  415: 'Unsupported media type',
  429: 'Rate limited: retry after Retry-After seconds',
  500: 'Unexpected failure (no details; the traceId finds it in the logs)',
  502: 'An upstream (GitHub) failed; details carry its status',
  503: 'A dependency (database, Redis) is unavailable, or the process is shutting down',
};

/**
 * The served OpenAPI 3.1 document. Nest's scanner supplies paths, parameters and request bodies from the
 * controllers and DTOs; the response schemas come from the controllers' decorators and the modules'
 * `*.schemas.ts`; the rest is derived here from the sources the server itself runs on, so the document
 * cannot claim what the server does not do:
 * - credentials from the same @Public / @AllowProjectToken metadata the global guard reads, and the path
 *   prefix that sends Area A to the API key / OAuth guard;
 * - error bodies and their code enums from the one error table (ERROR_CODE_MAPPING);
 * - Area A tool arguments and results from the tool registry (the schemas MCP lists);
 * - the OAuth 2 flow from the authorization server metadata, `servers` from PUBLIC_URL.
 */
export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const catalog = app.get(ScopeCatalog, { strict: false });
  const oauth = authorizationServerMetadata(config, catalog.names());
  const base = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Atrium API')
    .setDescription(
      [
        'Area A (`/api/v1/public/mcp`): tool invocation for personal API keys (`atr_…`) and OAuth access tokens, as a JSON door (`/tools`, `/call`) and an MCP Streamable HTTP endpoint. Bodies are bare; errors are `{error: {code, message, details}, traceId}`.',
        'Area B (`/api`): the backend, for user access tokens (JWT) and, on project routes, project session tokens (`atp_…`). Every answer is the envelope `{success, data, error, traceId}`.',
        'Every response carries `X-Request-Id` (the `traceId`).',
      ].join('\n\n'),
    )
    .setVersion(config.version)
    .addServer(config.publicUrl, 'PUBLIC_URL')
    .addSecurity('userToken', {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'User access token from POST /api/auth/login (Area B).',
    })
    .addSecurity('projectToken', {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'atp_…',
      description:
        'Project session token from POST /api/projects/{id}/session-tokens: that one project’s document, RAG, agent and project routes only.',
    })
    .addSecurity('apiKey', {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'atr_…',
      description:
        'Personal API key from POST /api/api-keys (Area A only). Keys with an expiry get X-Api-Key-Expires-At on every answer.',
    })
    .addSecurity('oauth2', {
      type: 'oauth2',
      description: `OAuth 2.1 for MCP clients: authorization code with PKCE (${oauth.code_challenge_methods_supported?.join(', ')}), dynamic registration at ${oauth.registration_endpoint}, metadata at ${config.publicUrl}/.well-known/oauth-authorization-server. Access tokens (ato_…) act on Area A like an API key with the granted scopes.`,
      flows: {
        authorizationCode: {
          authorizationUrl: oauth.authorization_endpoint,
          tokenUrl: oauth.token_endpoint,
          refreshUrl: oauth.token_endpoint,
          scopes: Object.fromEntries(catalog.list().map((scope) => [scope.name, scope.allows])),
        },
      },
    })
    .build();
  const document = SwaggerModule.createDocument(app, base);
  const credentials = credentialsByOperationId(app);
  const tools = toolOpenApi(app.get(ToolsService, { strict: false }), catalog.names());
  const usedErrorResponses = new Set<string>();

  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = (item as Record<string, Operation | undefined>)[method];
      if (!operation) continue;
      const area: Area = path.startsWith(TOOL_API_PREFIX)
        ? 'tool-api'
        : isOAuthEndpoint({ path })
          ? 'oauth'
          : 'backend';
      // A handler mounted on several paths (the MCP endpoint's narrowed URLs) declares the parameters of those with one.
      for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
        const parameters = (operation.parameters ??= []);
        const declared = parameters.some(
          (p) => (p as { in?: string; name?: string }).in === 'path' && (p as { name?: string }).name === name,
        );
        if (!declared)
          parameters.push({
            name,
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description:
              name === 'toolset' ? 'A toolset: tasks, docs, github, or one a tool provider declares' : undefined,
          });
      }
      // A handler mounted on several paths gets one operation per path, its id suffixed [0], [1], …
      const found = operation.operationId ? credentials.get(operation.operationId.replace(/\[\d+\]$/, '')) : undefined;
      if (!found)
        throw new Error(`OpenAPI: no controller found for ${method.toUpperCase()} ${path} (${operation.operationId})`);
      if (area === 'tool-api') operation.security = found.apiKey ? [{ apiKey: [] }, { oauth2: [] }] : [];
      else
        operation.security = found.isPublic
          ? []
          : [{ userToken: [] }, ...(found.projectToken ? [{ projectToken: [] }] : [])];
      // Nest documents a POST without a response decorator as an empty 201; every route declares its own.
      for (const [status, response] of Object.entries(operation.responses)) {
        if (response.description === '' && response.content === undefined) delete operation.responses[status];
      }
      const statuses = new Set<number>((operation[ERRORS_EXTENSION] as number[] | undefined) ?? []);
      delete operation[ERRORS_EXTENSION];
      if (!isMcpEndpoint({ path })) {
        for (const status of genericErrorStatuses(path, area, method, operation)) statuses.add(status);
      }
      for (const status of [...statuses].sort()) {
        if (operation.responses[String(status)]) continue;
        operation.responses[String(status)] = { $ref: `#/components/responses/${errorResponseName(area, status)}` };
        usedErrorResponses.add(errorResponseName(area, status));
      }
      if (!Object.keys(operation.responses).some((status) => status.startsWith('2') || status === '405')) {
        throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} declares no success response`);
      }
      if (path === `${TOOL_API_PREFIX}mcp/call` && method === 'post') operation[TOOLS_EXTENSION] = tools.tools;
    }
  }

  document.components ??= {};
  document.components.schemas = {
    ...toThirtyOne(document.components.schemas ?? {}),
    ...namedSchemas(),
    Scope: scopeSchema(catalog),
    ...tools.schemas,
  };
  const responses = errorResponses();
  document.components.responses = Object.fromEntries(
    [...usedErrorResponses].sort().map((name) => [name, responses[name]]),
  ) as never;
  for (const item of Object.values(document.paths)) toThirtyOne(item);
  return document;
}

interface HandlerCredentials {
  isPublic: boolean;
  projectToken: boolean;
  /** Area A: the handler runs behind ApiKeyAuthGuard (API key or OAuth access token). */
  apiKey: boolean;
}

/**
 * Per handler: `@Public()` / `@AllowProjectToken()` read exactly as BackendAuthGuard reads them, and whether
 * ApiKeyAuthGuard guards it (class or method `@UseGuards`).
 */
function credentialsByOperationId(app: INestApplication): Map<string, HandlerCredentials> {
  const reflector = new Reflector();
  const out = new Map<string, HandlerCredentials>();
  const guardedByKey = (target: object): boolean =>
    ((Reflect.getMetadata(GUARDS_METADATA, target) as unknown[] | undefined) ?? []).includes(ApiKeyAuthGuard);
  for (const wrapper of app.get(DiscoveryService, { strict: false }).getControllers()) {
    const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
    if (!controller) continue;
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const targets = [handler as (...args: unknown[]) => unknown, controller];
      out.set(`${controller.name}_${name}`, {
        isPublic: reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets) === true,
        projectToken: reflector.getAllAndOverride<boolean>(ALLOW_PROJECT_TOKEN, targets) === true,
        apiKey: guardedByKey(handler) || guardedByKey(controller),
      });
    }
  }
  return out;
}

/** What any route of its kind can answer, whatever the route: input, credential, body size, limits, outages. */
function genericErrorStatuses(path: string, area: Area, method: string, operation: Operation): number[] {
  const statuses = [500];
  // Any body is parsed before routing, whatever the route expects: too large → 413, an encoding or charset the
  // parser cannot read → 415 (the fuzz drill sends both to every route).
  const body = ['post', 'put', 'patch'].includes(method) ? [413, 415] : [];
  // The authorization server answers RFC 6749 bodies; its routes declare their own 400/401.
  if (area === 'oauth') return [...statuses, 429, ...body];
  statuses.push(...body);
  const hasInput = (operation.parameters?.length ?? 0) > 0 || operation.requestBody !== undefined;
  if (hasInput || body.length > 0) statuses.push(400);
  if ((operation.security?.length ?? 0) > 0) statuses.push(401);
  const probe = path === '/api/health' || path === '/api/ready';
  if (!probe) statuses.push(429, 503);
  return statuses;
}

type Area = 'tool-api' | 'backend' | 'oauth';

function errorResponseName(area: Area, status: number): string {
  return `${area === 'tool-api' ? 'ToolApiError' : area === 'oauth' ? 'OAuthError' : 'BackendError'}${status}`;
}

const STATUSES = [400, 401, 403, 404, 409, 413, 415, 429, 500, 502, 503];

/** One reusable response per area and status, its `error.code` narrowed to the codes that status carries. */
function errorResponses(): Record<string, JsonSchema> {
  const responses: Record<string, JsonSchema> = {};
  for (const status of STATUSES) {
    const headers: Record<string, JsonSchema> = {};
    if (status === 429)
      headers['Retry-After'] = {
        required: true,
        description: 'Seconds to wait before retrying',
        schema: { type: 'integer', minimum: 1 },
      };
    if (status === 401)
      headers['WWW-Authenticate'] = {
        required: true,
        description: 'Bearer challenge (Area A: with resource_metadata for OAuth clients)',
        schema: { type: 'string' },
      };
    const backendCodes = backendCodesFor(status);
    const toolCodes = toolApiCodesFor(status);
    // 413 and 415 on Area A are invalid_request (ERROR_CODE_MAPPING); 502 on Area B is DEPENDENCY_UNAVAILABLE.
    responses[errorResponseName('backend', status)] = errorResponse(
      status,
      BackendErrorBody.$ref,
      backendCodes,
      headers,
    );
    responses[errorResponseName('tool-api', status)] = errorResponse(status, ToolApiErrorBody.$ref, toolCodes, headers);
    responses[errorResponseName('oauth', status)] = {
      description: ERROR_DESCRIPTIONS[status],
      ...(status === 429 ? { headers } : {}),
      content: { 'application/json': { schema: { $ref: OAuthErrorSchema.$ref } } },
    };
  }
  return responses;
}

function errorResponse(status: number, body: string, codes: string[], headers: Record<string, JsonSchema>): JsonSchema {
  return {
    description: ERROR_DESCRIPTIONS[status],
    ...(Object.keys(headers).length ? { headers } : {}),
    content: {
      'application/json': {
        schema: {
          allOf: [
            { $ref: body },
            { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: codes } } } } },
          ],
        },
      },
    },
  };
}

/** OpenAPI 3.0's `nullable: true` (what the DTO scanner writes) as the 3.1 / JSON Schema `type: [..., 'null']`. */
function toThirtyOne<T>(value: T): T {
  if (Array.isArray(value)) {
    value.forEach(toThirtyOne);
  } else if (typeof value === 'object' && value !== null) {
    const node = value as Record<string, unknown>;
    if (node.nullable === true) {
      if (typeof node.type === 'string') node.type = [node.type, 'null'];
      else if (node.$ref === undefined && node.allOf === undefined) node.type = ['null'];
      delete node.nullable;
    } else if (node.nullable === false) {
      delete node.nullable;
    }
    Object.values(node).forEach(toThirtyOne);
  }
  return value;
}

/** A credential scope: the catalog the tool providers declared (filled at start-up, hence not a static schema). */
function scopeSchema(catalog: ScopeCatalog): Record<string, unknown> {
  return {
    type: 'string',
    enum: catalog.names(),
    description: 'A credential scope (the catalog: GET /api/api-keys/scopes)',
  };
}
