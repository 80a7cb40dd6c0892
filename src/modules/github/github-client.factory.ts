import { Inject, Injectable, Logger } from '@nestjs/common';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import { createHash } from 'node:crypto';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';

const GithubOctokit = Octokit.plugin(retry, throttling);
export type GithubClient = InstanceType<typeof GithubOctokit>;

/**
 * A rate-limited call waits for GitHub only when the wait is this short; otherwise the caller gets
 * 429 rate_limited with Retry-After at once instead of a request that hangs for minutes.
 */
const MAX_RATE_LIMIT_WAIT_SECONDS = 2;

/** 429 is the throttling plugin's business; the retry plugin only handles 5xx and network failures. */
const DO_NOT_RETRY = [400, 401, 403, 404, 410, 422, 429, 451];

interface ExhaustedQuota {
  /** Epoch ms when GitHub resets the token's core quota. */
  resetAt: number;
}

/**
 * Builds Octokit clients for GitHub or GitHub Enterprise Server (GITHUB_API_URL): per-request timeout,
 * retries of idempotent requests after 5xx/network failures, GitHub's recommended throttling, and
 * primary/secondary rate limits answered with 429 instead of long waits. Tokens never reach a log line.
 */
@Injectable()
export class GithubClientFactory {
  private readonly logger = new Logger('GitHub');
  /** Per token (by hash): a core quota GitHub reported as used up, so we stop calling until it resets. */
  private readonly exhausted = new Map<string, ExhaustedQuota>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** `token` undefined = the server's GITHUB_TOKEN (or anonymous when there is none). */
  create(token?: string): GithubClient {
    const auth = token ?? this.config.github.token;
    const tokenId = auth ? createHash('sha256').update(auth).digest('hex').slice(0, 16) : 'anonymous';
    const { timeoutMs, maxRetries, apiUrl } = this.config.github;
    const logger = this.logger;
    const onLimit =
      (kind: string) =>
      (retryAfter: number, options: { method: string; url: string }, _octokit: unknown, retryCount: number) => {
        const wait = retryCount < 1 && retryAfter <= MAX_RATE_LIMIT_WAIT_SECONDS;
        logger.warn({
          msg: `GitHub ${kind} rate limit`,
          method: options.method,
          url: options.url,
          retryAfter,
          retrying: wait,
        });
        return wait;
      };
    const client = new GithubOctokit({
      auth,
      baseUrl: apiUrl,
      userAgent: `atrium/${this.config.version}`,
      log: {
        debug: () => undefined,
        info: () => undefined,
        warn: (message: string) => logger.warn({ msg: message }),
        // Octokit logs every failed request here; the mapped error is logged once where it is answered.
        error: (message: string) => logger.debug({ msg: message }),
      },
      request: { fetch: fetchWithTimeout(timeoutMs) },
      retry: { retries: maxRetries, doNotRetry: DO_NOT_RETRY },
      throttle: {
        id: tokenId,
        onRateLimit: onLimit('primary'),
        onSecondaryRateLimit: onLimit('secondary'),
      },
    });
    client.hook.before('request', () => this.refuseWhileExhausted(tokenId));
    client.hook.after('request', (response) => this.remember(tokenId, response.headers));
    client.hook.error('request', (error) => {
      const response = (error as { response?: { headers?: Record<string, unknown> } }).response;
      if (response?.headers) this.remember(tokenId, response.headers);
      throw error;
    });
    return client;
  }

  private refuseWhileExhausted(tokenId: string): void {
    const quota = this.exhausted.get(tokenId);
    if (!quota) return;
    const waitSeconds = Math.ceil((quota.resetAt - Date.now()) / 1000);
    if (waitSeconds <= 0) {
      this.exhausted.delete(tokenId);
      return;
    }
    throw new AppException(
      ErrorCode.RateLimited,
      `GitHub's rate limit for this repository's token is used up; retry in ${waitSeconds} s`,
      { upstream: 'github', retry_after_seconds: waitSeconds },
      { 'Retry-After': String(waitSeconds) },
    );
  }

  private remember(tokenId: string, headers: Record<string, unknown>): void {
    const resource = headers['x-ratelimit-resource'];
    if (resource !== undefined && resource !== 'core') return;
    if (String(headers['x-ratelimit-remaining']) !== '0') {
      this.exhausted.delete(tokenId);
      return;
    }
    const reset = Number(headers['x-ratelimit-reset']);
    if (Number.isFinite(reset) && reset * 1000 > Date.now()) this.exhausted.set(tokenId, { resetAt: reset * 1000 });
  }
}

/** One deadline per HTTP request (not per paginated call), combined with any caller signal. */
function fetchWithTimeout(timeoutMs: number): typeof fetch {
  return (input, init) => {
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    return fetch(input, { ...init, signal });
  };
}
