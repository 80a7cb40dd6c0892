import { ErrorCode } from '../../common/errors/error-code.js';
import { describeFailure, toGithubAppException } from './github-errors.js';

const context = { repository: 'acme/widgets', action: 'list issues' };
const requestError = (status: number, data: unknown = {}, headers: Record<string, string> = {}) =>
  Object.assign(
    new Error(
      typeof (data as { message?: string }).message === 'string' ? (data as { message: string }).message : 'err',
    ),
    {
      name: 'HttpError',
      status,
      response: { status, headers, data },
    },
  );

describe('toGithubAppException', () => {
  it.each([
    [401, /rejected the token used for repository acme\/widgets/],
    [403, /token used for repository acme\/widgets is not allowed to list issues/],
    [404, /token used for acme\/widgets lost access/],
    [500, /GitHub failed with HTTP 500 while trying to list issues in acme\/widgets/],
  ])('maps GitHub %i to upstream_error naming the repository', (status, message) => {
    const mapped = toGithubAppException(requestError(status, { message: 'x' }), context, 1000);
    expect(mapped.code).toBe(ErrorCode.UpstreamError);
    expect(mapped.message).toMatch(message);
    expect(mapped.details).toMatchObject({ upstream: 'github', upstream_status: status, repository: 'acme/widgets' });
  });

  it('maps a primary rate limit to rate_limited with Retry-After until the reset', () => {
    const reset = Math.floor(Date.now() / 1000) + 120;
    const mapped = toGithubAppException(
      requestError(
        403,
        { message: 'API rate limit exceeded' },
        { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      ),
      context,
      1000,
    );
    expect(mapped.code).toBe(ErrorCode.RateLimited);
    expect(Number(mapped.headers['Retry-After'])).toBeGreaterThanOrEqual(119);
    expect(Number(mapped.headers['Retry-After'])).toBeLessThanOrEqual(121);
  });

  it('maps a secondary rate limit (retry-after, or the message alone) to rate_limited', () => {
    expect(
      toGithubAppException(requestError(429, {}, { 'retry-after': '30' }), context, 1000).headers['Retry-After'],
    ).toBe('30');
    const byMessage = toGithubAppException(
      requestError(403, { message: 'You have exceeded a secondary rate limit.' }),
      context,
      1000,
    );
    expect(byMessage.code).toBe(ErrorCode.RateLimited);
    expect(byMessage.headers['Retry-After']).toBe('60');
  });

  it('reports timeouts and network failures without an upstream status', () => {
    const timeout = Object.assign(new Error('The operation was aborted due to timeout'), {
      status: 500,
      cause: { name: 'TimeoutError' },
    });
    const mappedTimeout = toGithubAppException(timeout, context, 2500);
    expect(mappedTimeout.message).toMatch(/did not answer within 2500 ms/);
    expect(mappedTimeout.details).toMatchObject({ upstream_status: null });
    const refused = toGithubAppException(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { status: 500 }),
      context,
      1000,
    );
    expect(refused.message).toBe('GitHub could not be reached while trying to list issues in acme/widgets');
    expect(describeFailure(refused).status).toBeNull();
  });

  it("never passes GitHub's text on: a body echoing the token stays out of the message and the details", () => {
    const token = 'ghp_0123456789abcdefghijABCDEFGHIJ0123456789';
    for (const status of [400, 401, 403, 404, 410, 422, 500, 502]) {
      const mapped = toGithubAppException(
        requestError(status, {
          message: `Bad credentials: token ${token}`,
          errors: [{ resource: 'Issue', field: 'title', code: 'custom', message: token }],
        }),
        { repository: 'acme/widgets', action: 'create an issue' },
        1000,
      );
      expect(mapped.code).toBe(ErrorCode.UpstreamError);
      expect(JSON.stringify({ message: mapped.message, details: mapped.details })).not.toContain(token);
      expect(mapped.details).toEqual({ upstream: 'github', upstream_status: status, repository: 'acme/widgets' });
    }
    const unprocessable = toGithubAppException(
      requestError(422, { message: 'Validation Failed' }),
      { repository: 'acme/widgets', action: 'create an issue' },
      1000,
    );
    expect(unprocessable.message).toMatch(/^GitHub refused to create an issue in acme\/widgets \(HTTP 422/);
  });
});
