import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddingError, embeddingKey, type EmbeddingProvider, type EmbeddingPurpose } from './embedding-provider.js';

export interface OpenAiEmbedderOptions {
  /** Base URL including the version path, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  model: string;
  dimensions: number;
  apiKey?: string;
  batchSize?: number;
  timeoutMs?: number;
  maxRetries?: number;
  /** First backoff delay; doubles per attempt, with jitter, capped at 20 s (or the server's Retry-After). */
  initialBackoffMs?: number;
  /** Send `dimensions` in the request (text-embedding-3 models shorten vectors; others reject the field). */
  sendDimensions?: boolean;
}

interface EmbeddingsResponse {
  data?: { index?: number; embedding?: unknown }[];
}

/**
 * Any OpenAI-compatible `POST {baseUrl}/embeddings` service (OpenAI, Azure-style gateways, vLLM, Ollama,
 * LM Studio, text-embeddings-inference). Batches inputs, times out each request, retries 429/5xx and
 * network failures with exponential backoff (honouring Retry-After), and refuses vectors whose dimension
 * differs from EMBEDDINGS_DIMENSIONS instead of storing them.
 */
export class OpenAiCompatibleEmbedder implements EmbeddingProvider {
  readonly provider = 'openai';
  readonly model: string;
  readonly dimensions: number;
  readonly key: string;
  private readonly endpoint: string;

  constructor(private readonly options: OpenAiEmbedderOptions) {
    this.model = options.model;
    this.dimensions = options.dimensions;
    this.key = embeddingKey(this.provider, this.model, this.dimensions);
    this.endpoint = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
  }

  async embed(texts: readonly string[], purpose: EmbeddingPurpose): Promise<number[][]> {
    const batchSize = this.options.batchSize ?? 64;
    const vectors: number[][] = [];
    for (let start = 0; start < texts.length; start += batchSize) {
      const batch = texts.slice(start, start + batchSize).map((text) => (text.trim() === '' ? ' ' : text));
      vectors.push(...(await this.embedBatch(batch, purpose)));
    }
    return vectors;
  }

  /**
   * A query embedding is on a caller's request path: one retry at most, so a slow or down service fails
   * the search within about two timeouts instead of minutes of backoff. Indexing runs in the background
   * and keeps every retry.
   */
  private async embedBatch(batch: string[], purpose: EmbeddingPurpose): Promise<number[][]> {
    const configured = this.options.maxRetries ?? 4;
    const maxRetries = purpose === 'query' ? Math.min(1, configured) : configured;
    let attempt = 0;
    for (;;) {
      try {
        return await this.request(batch);
      } catch (error) {
        const failure = error instanceof EmbeddingError ? error : new EmbeddingError('embeddings request failed', true);
        if (!failure.retryable || attempt >= maxRetries) {
          if (failure.retryable) failure.message = `${failure.message} (gave up after ${attempt + 1} attempts)`;
          throw failure;
        }
        const base = (this.options.initialBackoffMs ?? 500) * 2 ** attempt;
        const delay = Math.min(
          20_000,
          (failure as EmbeddingError & { retryAfterMs?: number }).retryAfterMs ?? base * (0.5 + Math.random()),
        );
        attempt += 1;
        await sleep(delay);
      }
    }
  }

  private async request(batch: string[]): Promise<number[][]> {
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    const body: Record<string, unknown> = { model: this.model, input: batch, encoding_format: 'float' };
    if (this.options.sendDimensions) body.dimensions = this.dimensions;
    let response: Response;
    try {
      response = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const name = (error as Error).name;
      const reason =
        name === 'TimeoutError' || name === 'AbortError' ? `timed out after ${timeoutMs} ms` : 'could not be reached';
      throw new EmbeddingError(`embeddings service ${reason}`, true);
    }
    if (!response.ok) {
      // The status only: the body is the upstream's text (it may echo the request, the API key included).
      await response.body?.cancel().catch(() => undefined);
      const retryable = response.status === 429 || response.status >= 500;
      const failure = new EmbeddingError(
        `embeddings service answered HTTP ${response.status}`,
        retryable,
        response.status,
      ) as EmbeddingError & { retryAfterMs?: number };
      const retryAfter = Number(response.headers.get('retry-after'));
      if (Number.isFinite(retryAfter) && retryAfter >= 0 && response.headers.has('retry-after'))
        failure.retryAfterMs = retryAfter * 1000;
      throw failure;
    }
    let payload: EmbeddingsResponse;
    try {
      payload = (await response.json()) as EmbeddingsResponse;
    } catch {
      throw new EmbeddingError('embeddings service returned a body that is not JSON');
    }
    const data = payload.data;
    if (!Array.isArray(data) || data.length !== batch.length) {
      throw new EmbeddingError(
        `embeddings service returned ${Array.isArray(data) ? data.length : 'no'} embeddings for ${batch.length} inputs`,
      );
    }
    const ordered = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return ordered.map((item) => {
      const vector = item.embedding;
      if (!Array.isArray(vector) || !vector.every((value) => typeof value === 'number' && Number.isFinite(value))) {
        throw new EmbeddingError('embeddings service returned an embedding that is not an array of numbers');
      }
      if (vector.length !== this.dimensions) {
        throw new EmbeddingError(
          `model "${this.model}" returned ${vector.length}-dimensional vectors but EMBEDDINGS_DIMENSIONS=${this.dimensions}; ` +
            `set EMBEDDINGS_DIMENSIONS=${vector.length} (existing chunks are then reindexed)`,
        );
      }
      return vector as number[];
    });
  }
}
