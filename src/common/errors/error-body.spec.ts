import { BadRequestException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { AppException } from './app.exception.js';
import { renderError } from './error-body.js';
import { ERROR_CODE_MAPPING, ErrorCode } from './error-code.js';
import { toAppException } from './to-app-exception.js';

describe('error mapping', () => {
  it('maps every code to a 4xx/5xx status and both area codes', () => {
    for (const code of Object.values(ErrorCode)) {
      const mapping = ERROR_CODE_MAPPING[code];
      expect(mapping.status).toBeGreaterThanOrEqual(400);
      expect(mapping.toolApiCode).toMatch(/^[a-z_]+$/);
      expect(mapping.backendCode).toMatch(/^[A-Z_]+$/);
    }
  });

  it('renders the Area A body with snake_case code, details and traceId', () => {
    const rendered = renderError(
      new AppException(ErrorCode.InsufficientScope, 'needs tasks:write', { required_scope: 'tasks:write' }),
      'tool-api',
      't-1',
    );
    expect(rendered.status).toBe(403);
    expect(rendered.body).toEqual({
      error: { code: 'insufficient_scope', message: 'needs tasks:write', details: { required_scope: 'tasks:write' } },
      traceId: 't-1',
    });
  });

  it('renders the Area B envelope and adds WWW-Authenticate on 401', () => {
    const rendered = renderError(new AppException(ErrorCode.AuthRequired, 'log in'), 'backend', 't-2');
    expect(rendered.status).toBe(401);
    expect(rendered.headers['WWW-Authenticate']).toBe('Bearer');
    expect(rendered.body).toEqual({
      success: false,
      data: null,
      error: { code: 'AUTH_REQUIRED', message: 'log in', details: [] },
      traceId: 't-2',
    });
  });

  it('lists Area B validation details as [{field, message}] whatever shape the shared rule gave them', () => {
    const fromArgument = renderError(
      new AppException(ErrorCode.InvalidArgument, 'title must be 1..300 characters', { argument: 'title' }),
      'backend',
      't',
    );
    expect(fromArgument.body.error).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'title must be 1..300 characters',
      details: [{ field: 'title', message: 'title must be 1..300 characters' }],
    });
    const fromHeader = renderError(
      new AppException(ErrorCode.InvalidRequest, 'bad key', { header: 'Idempotency-Key' }),
      'backend',
      't',
    );
    expect((fromHeader.body.error as { details: unknown }).details).toEqual([
      { field: 'Idempotency-Key', message: 'bad key' },
    ]);
    // Documented object details of other codes stay as API.md shows them.
    const conflict = renderError(new AppException(ErrorCode.Conflict, 'dup', { existingId: 'x' }), 'backend', 't');
    expect((conflict.body.error as { details: unknown }).details).toEqual({ existingId: 'x' });
  });

  it('normalises framework and middleware errors, and leaves unknown errors to the 500 path', () => {
    expect(toAppException(new BadRequestException(['name must be a string']))).toMatchObject({
      code: ErrorCode.ValidationFailed,
      details: [{ message: 'name must be a string' }],
    });
    expect(toAppException(new NotFoundException('Cannot GET /api/nope'))?.code).toBe(ErrorCode.NotFound);
    expect(toAppException(new PayloadTooLargeException())?.code).toBe(ErrorCode.PayloadTooLarge);
    expect(toAppException({ type: 'entity.parse.failed', status: 400 })?.code).toBe(ErrorCode.InvalidRequest);
    expect(toAppException({ type: 'entity.too.large', status: 413 })?.code).toBe(ErrorCode.PayloadTooLarge);
    expect(toAppException({ code: 'LIMIT_FILE_SIZE' })?.code).toBe(ErrorCode.PayloadTooLarge);
    expect(toAppException(new Error('relation "users" does not exist'))).toBeUndefined();
  });

  it('maps dependency outages to DEPENDENCY_UNAVAILABLE and outside-service failures to upstream_error', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(toAppException(refused)?.code).toBe(ErrorCode.DependencyUnavailable);
    expect(toAppException(new AggregateError([refused], ''))?.code).toBe(ErrorCode.DependencyUnavailable);
    expect(
      toAppException(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))
        ?.code,
    ).toBe(ErrorCode.DependencyUnavailable);
    expect(toAppException(new Error('Connection terminated unexpectedly'))?.code).toBe(ErrorCode.DependencyUnavailable);
    const redis = Object.assign(new Error('Reached the max retries per request limit (which is 1).'), {
      name: 'MaxRetriesPerRequestError',
    });
    expect(toAppException(redis)?.code).toBe(ErrorCode.DependencyUnavailable);
    const upstream = toAppException(
      Object.assign(new Error('embeddings service at http://10.0.0.5/v1 timed out'), { upstream: 'embeddings' }),
    );
    expect(upstream?.code).toBe(ErrorCode.UpstreamError);
    expect(upstream?.message).not.toContain('10.0.0.5');
    expect(toAppException(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBeUndefined();
    expect(toAppException('boom')).toBeUndefined();
  });
});
