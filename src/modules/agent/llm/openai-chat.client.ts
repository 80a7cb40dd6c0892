import { setTimeout as sleep } from 'node:timers/promises';
import type { AppConfig } from '../../../config/app-config.js';
import type { ModelToolCall } from '../agent-run.types.js';
import { LlmError, type Completion, type CompletionRequest, type LlmClient } from './llm-client.js';

interface ChatCompletionResponse {
  choices?: {
    message?: {
      content?: string | null;
      tool_calls?: { id?: string; type?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string;
  }[];
}

const MAX_BACKOFF_MS = 8_000;

/**
 * Any OpenAI-compatible Chat Completions service with tool calling, over plain fetch. Each attempt has
 * LLM_TIMEOUT_MS; 429, 5xx and network failures are retried LLM_MAX_RETRIES times with exponential
 * backoff (Retry-After honoured, capped); the caller's signal (cancel, step/run timeout) stops everything.
 */
export class OpenAiChatClient implements LlmClient {
  readonly provider = 'openai';
  readonly model: string;

  constructor(
    private readonly config: AppConfig['llm'],
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.model = config.model;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const body = JSON.stringify({
      model: this.model,
      messages: request.messages,
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function',
              function: { name: tool.name, description: tool.description, parameters: tool.parameters },
            })),
            tool_choice: 'auto',
          }
        : {}),
    });
    let lastError: LlmError | undefined;
    for (let attempt = 0; attempt <= this.config.maxRetries; attempt += 1) {
      request.signal.throwIfAborted();
      const outcome = await this.attempt(body, request.signal);
      if (!(outcome instanceof LlmError)) return outcome;
      lastError = outcome;
      if (!outcome.retryable || attempt === this.config.maxRetries) break;
      const wait = outcome instanceof RetryAfter ? outcome.waitMs : Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt);
      await sleep(wait, undefined, { signal: request.signal });
    }
    const attempts = this.config.maxRetries + 1;
    throw new LlmError(
      lastError!.retryable ? `${lastError!.message} (gave up after ${attempts} attempts)` : lastError!.message,
    );
  }

  private async attempt(body: string, signal: AbortSignal): Promise<Completion | LlmError> {
    const timeout = AbortSignal.timeout(this.config.timeoutMs);
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.config.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(this.config.apiKey ? { authorization: `Bearer ${this.config.apiKey}` } : {}),
        },
        body,
        signal: AbortSignal.any([signal, timeout]),
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (timeout.aborted) return new LlmError(`LLM request timed out after ${this.config.timeoutMs} ms`, true);
      return new LlmError('LLM service unreachable', true);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      return new LlmError('LLM response could not be read', true);
    }
    if (!response.ok) {
      // The status only: the body is the upstream's text (it may echo the request, the API key included).
      const message = `LLM service answered HTTP ${response.status}`;
      if (response.status === 429) {
        const retryAfter = Number(response.headers.get('retry-after'));
        return new RetryAfter(
          message,
          Number.isFinite(retryAfter) && retryAfter >= 0 ? Math.min(MAX_BACKOFF_MS, retryAfter * 1000) : 1000,
        );
      }
      if (response.status >= 500) return new LlmError(message, true);
      if (response.status === 401 || response.status === 403) return new LlmError(`${message} (check LLM_API_KEY)`);
      return new LlmError(message);
    }
    let parsed: ChatCompletionResponse;
    try {
      parsed = JSON.parse(text) as ChatCompletionResponse;
    } catch {
      return new LlmError('LLM service answered with something that is not JSON');
    }
    const message = parsed.choices?.[0]?.message;
    if (!message) return new LlmError('LLM response has no choices[0].message');
    const toolCalls: ModelToolCall[] = (message.tool_calls ?? []).map((call, i) => ({
      id: call.id || `call_${i}`,
      name: call.function?.name ?? '',
      arguments: call.function?.arguments ?? '{}',
    }));
    return { content: message.content ?? null, toolCalls };
  }
}

class RetryAfter extends LlmError {
  constructor(
    message: string,
    readonly waitMs: number,
  ) {
    super(message, true);
  }
}
