import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';

/** What an Octokit failure looks like (RequestError, or a fetch failure it wrapped); duck-typed on purpose. */
interface OctokitFailure {
  status?: number;
  message?: string;
  name?: string;
  cause?: unknown;
  response?: { headers?: Record<string, unknown>; data?: unknown };
}

export interface GithubCallContext {
  /** `owner/name`, named in every message. */
  repository: string;
  /** What was being done, e.g. "list issues", "comment on issue #4". */
  action: string;
}

/** The parts of a failure the mappers look at. */
export interface UpstreamFailure {
  /** HTTP status GitHub answered; null when no answer came (network failure or timeout). */
  status: number | null;
  /** GitHub's own message: read only to recognise a rate limit, never shown to a caller. */
  githubMessage: string | undefined;
  timedOut: boolean;
  /** Seconds to wait when GitHub rate limited the call; undefined otherwise. */
  retryAfterSeconds: number | undefined;
  /** For a missing answer: why (e.g. "connect ECONNREFUSED"), for the server log only. */
  reason: string | undefined;
}

export function describeFailure(error: unknown): UpstreamFailure {
  const failure = (typeof error === 'object' && error !== null ? error : {}) as OctokitFailure;
  const response = failure.response;
  const headers = response?.headers ?? {};
  const data = (typeof response?.data === 'object' && response.data !== null ? response.data : {}) as {
    message?: unknown;
  };
  const githubMessage = typeof data.message === 'string' ? data.message : undefined;
  const timedOut = isTimeout(failure);
  const status = response && typeof failure.status === 'number' ? failure.status : null;
  return {
    status,
    githubMessage,
    timedOut,
    retryAfterSeconds:
      status === null ? undefined : rateLimitWait(status, headers, githubMessage ?? failure.message ?? ''),
    reason: status === null ? (timedOut ? 'timeout' : (failure.message ?? 'network failure')) : undefined,
  };
}

/**
 * A GitHub failure during a tool call, as the caller should see it: 429 rate_limited with Retry-After,
 * or 502 upstream_error naming the repository, with the upstream status in the details. The message is
 * Atrium's own text for that status: GitHub's body (its message, field errors, anything an upstream or a proxy
 * in front of it echoes, such as the Authorization header) never reaches the caller. An AppException
 * (e.g. our own rate-limit refusal) passes through unchanged.
 */
export function toGithubAppException(error: unknown, context: GithubCallContext, timeoutMs: number): AppException {
  if (error instanceof AppException) return error;
  const failure = describeFailure(error);
  const details: Record<string, unknown> = {
    upstream: 'github',
    upstream_status: failure.status,
    repository: context.repository,
  };

  if (failure.retryAfterSeconds !== undefined) {
    return new AppException(
      ErrorCode.RateLimited,
      `GitHub rate limited the call to ${action(context)}; retry in ${failure.retryAfterSeconds} s`,
      { ...details, retry_after_seconds: failure.retryAfterSeconds },
      { 'Retry-After': String(failure.retryAfterSeconds) },
    );
  }
  return new AppException(ErrorCode.UpstreamError, githubFailureMessage(failure, context, timeoutMs), details);
}

/** Atrium's fixed sentence for a GitHub failure: the status and what it usually means, no upstream text. */
export function githubFailureMessage(failure: UpstreamFailure, context: GithubCallContext, timeoutMs: number): string {
  switch (failure.status) {
    case null:
      return failure.timedOut
        ? `GitHub did not answer within ${timeoutMs} ms while trying to ${action(context)}`
        : `GitHub could not be reached while trying to ${action(context)}`;
    case 401:
      return `GitHub rejected the token used for repository ${context.repository} (HTTP 401); an admin must register the repository again with a valid token`;
    case 403:
      return `The token used for repository ${context.repository} is not allowed to ${context.action} (GitHub HTTP 403); it may have lost access to the repository`;
    case 404:
      return `GitHub answered 404 when trying to ${action(context)}: it no longer exists or the token used for ${context.repository} lost access to it`;
    case 410:
      return `GitHub answered 410 Gone when trying to ${action(context)} (the feature may be disabled)`;
    case 422:
      return `GitHub refused to ${action(context)} (HTTP 422: the request was not valid for GitHub, e.g. an unknown label or an empty field)`;
    default:
      return `GitHub failed with HTTP ${failure.status} while trying to ${action(context)}`;
  }
}

function action(context: GithubCallContext): string {
  return `${context.action} in ${context.repository}`;
}

function isTimeout(failure: OctokitFailure): boolean {
  const cause = failure.cause as { name?: unknown } | undefined;
  return (
    failure.name === 'TimeoutError' ||
    cause?.name === 'TimeoutError' ||
    /aborted due to timeout/i.test(failure.message ?? '')
  );
}

/**
 * GitHub signals a primary limit with 403/429 and x-ratelimit-remaining: 0 (wait until x-ratelimit-reset),
 * and a secondary limit with 403/429, a "secondary rate limit" message and usually retry-after.
 */
function rateLimitWait(status: number, headers: Record<string, unknown>, message: string): number | undefined {
  if (status !== 403 && status !== 429) return undefined;
  const retryAfter = Number(headers['retry-after']);
  if (Number.isFinite(retryAfter) && retryAfter >= 0 && headers['retry-after'] !== undefined)
    return Math.max(1, Math.ceil(retryAfter));
  if (String(headers['x-ratelimit-remaining']) === '0') {
    const reset = Number(headers['x-ratelimit-reset']);
    return Number.isFinite(reset) ? Math.max(1, Math.ceil(reset - Date.now() / 1000)) : 60;
  }
  if (status === 429 || /secondary rate limit|abuse/i.test(message)) return 60;
  return undefined;
}
