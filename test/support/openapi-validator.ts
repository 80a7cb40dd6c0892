import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/* ajv-formats is CommonJS with a default export; under ESM interop it may arrive wrapped. */
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as typeof addFormatsModule;

type Json = Record<string, any>;

interface Route {
  template: string;
  pattern: RegExp;
  params: number;
}

/** Bodies larger than this are not captured (a large export is not what this check is for). */
const MAX_CAPTURED_BYTES = 4 * 1024 * 1024;

/**
 * Checks answers against the served OpenAPI document: for the route and status of each response, the
 * documented JSON schema must accept the body. Schemas are compiled once per (route, status) per process.
 * Paths the document does not describe (the account page, the OAuth server, unknown routes) are skipped;
 * a status the document does not list for its route is a mismatch.
 */
export class OpenApiResponseValidator {
  private readonly ajv: Ajv2020;
  private readonly routes: Route[];
  private readonly compiled = new Map<string, ValidateFunction | null>();

  constructor(private readonly document: Json) {
    this.ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false, logger: false });
    addFormats(this.ajv);
    this.ajv.addSchema(document, 'openapi.json');
    this.routes = Object.keys(document.paths)
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/}]+\}/g, '[^/]+')}/?$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      // A literal segment beats a parameter (/api/agent/history before /api/agent/{x}).
      .sort((a, b) => a.params - b.params);
  }

  /** A sentence describing the mismatch, or undefined when the answer matches (or is not described). */
  check(
    method: string,
    url: string,
    status: number,
    contentType: string | undefined,
    body: Buffer,
    requestBody: unknown,
  ): string | undefined {
    const path = url.split('?')[0];
    const route = this.routes.find((candidate) => candidate.pattern.test(path));
    if (!route) return undefined;
    const operation = this.document.paths[route.template][method.toLowerCase()];
    if (!operation) return undefined;
    const label = `${method} ${route.template} → ${status}`;
    let response = operation.responses[String(status)];
    if (!response)
      return `${label}: status ${status} is not documented for this operation (documented: ${Object.keys(operation.responses).join(', ')})`;
    if (response.$ref) response = this.resolve(response.$ref);
    const media = response.content?.['application/json'];
    if (!media) return undefined;
    if (!contentType?.includes('json'))
      return `${label}: documented as application/json, answered ${contentType ?? 'no content type'}`;
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      return `${label}: the body is not JSON: ${body.toString('utf8').slice(0, 200)}`;
    }
    const pointer = `${response.$pointer ?? `#/paths/${escape(route.template)}/${method.toLowerCase()}/responses/${status}`}/content/application~1json/schema`;
    const problem = this.validate(pointer, value);
    if (problem) return `${label}: ${problem}\n  body: ${JSON.stringify(value).slice(0, 600)}`;
    // POST /call: the result must also match the named tool's own result schema, not just any tool's.
    const tool =
      typeof (requestBody as Json | undefined)?.name === 'string'
        ? operation['x-atrium-tools']?.[(requestBody as Json).name]
        : undefined;
    if (tool && status === 200) {
      const resultProblem = this.validate(`#${tool.result.$ref.slice(1)}`, (value as Json).result);
      if (resultProblem)
        return `${label} (${(requestBody as Json).name} result): ${resultProblem}\n  body: ${JSON.stringify(value).slice(0, 600)}`;
    }
    return undefined;
  }

  private resolve(ref: string): Json {
    const parts = ref
      .slice(2)
      .split('/')
      .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
    let node: Json = this.document;
    for (const part of parts) node = node[part];
    return { ...node, $pointer: ref };
  }

  private validate(pointer: string, value: unknown): string | undefined {
    let validate = this.compiled.get(pointer);
    if (validate === undefined) {
      validate = this.ajv.getSchema(`openapi.json${pointer}`) ?? null;
      this.compiled.set(pointer, validate);
    }
    if (!validate) return `no schema at ${pointer}`;
    if (validate(value)) return undefined;
    return (validate.errors ?? [])
      .map(
        (error) =>
          `${error.instancePath || '/'} ${error.message} (${error.schemaPath}${error.params ? ` ${JSON.stringify(error.params)}` : ''})`,
      )
      .join('; ');
  }
}

function escape(template: string): string {
  return template.replaceAll('~', '~0').replaceAll('/', '~1');
}

let shared: Promise<OpenApiResponseValidator> | undefined;
const mismatches: string[] = [];

/** The validator of this process, built from the first app's served document. */
export function openApiValidator(baseUrl: string): Promise<OpenApiResponseValidator> {
  shared ??= fetch(`${baseUrl}/api/docs/openapi.json`)
    .then((res) => res.json() as Promise<Json>)
    .then((document) => new OpenApiResponseValidator(document));
  return shared;
}

/** Mismatches seen since the last call (the test hooks report and clear them). */
export function takeOpenApiMismatches(): string[] {
  return mismatches.splice(0);
}

/**
 * Watches every answer of an in-process server: the body is captured as it is written and checked when the
 * response ends, before the client can see it, so a mismatch is recorded by the time the test looks.
 */
export function watchResponses(server: Server, validator: OpenApiResponseValidator): void {
  server.prependListener(
    'request',
    (req: IncomingMessage & { body?: unknown; originalUrl?: string }, res: ServerResponse) => {
      const url = req.url ?? '';
      const method = req.method ?? 'GET';
      const chunks: Buffer[] = [];
      let size = 0;
      const keep = (chunk: unknown, encoding?: unknown) => {
        if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > MAX_CAPTURED_BYTES) return;
        const buffer = Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
        size += buffer.length;
        chunks.push(buffer);
      };
      const write = res.write.bind(res) as (...args: unknown[]) => boolean;
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      (res as unknown as { write: unknown }).write = (...args: unknown[]) => {
        keep(args[0], args[1]);
        return write(...args);
      };
      (res as unknown as { end: unknown }).end = (...args: unknown[]) => {
        keep(args[0], args[1]);
        const contentType = res.getHeader('content-type');
        if (size <= MAX_CAPTURED_BYTES && !String(contentType ?? '').startsWith('text/event-stream')) {
          try {
            const problem = validator.check(
              method,
              url,
              res.statusCode,
              contentType === undefined ? undefined : String(contentType),
              Buffer.concat(chunks),
              req.body,
            );
            if (problem) mismatches.push(problem);
          } catch (error) {
            mismatches.push(
              `${method} ${url} → ${res.statusCode}: the check itself failed: ${(error as Error).message}`,
            );
          }
        }
        return end(...args);
      };
    },
  );
}

/**
 * Fails the test during which an answer did not match the document (registered once per test file by
 * test-app.ts, which every in-process suite uses to start its app).
 */
export function failOnOpenApiMismatches(): void {
  const found = takeOpenApiMismatches();
  if (found.length > 0) {
    throw new Error(
      `${found.length} answer(s) do not match the OpenAPI document (/api/docs/openapi.json):\n- ${found.join('\n- ')}`,
    );
  }
}
