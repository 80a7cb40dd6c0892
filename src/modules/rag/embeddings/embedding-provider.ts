import type { HashingEmbedderOptions } from './offline-hashing.embedder.js';

/** Injection token for the configured {@link EmbeddingProvider}. */
export const EMBEDDING_PROVIDER = Symbol('EMBEDDING_PROVIDER');

/** What the text is for: some models embed queries and passages differently. */
export type EmbeddingPurpose = 'document' | 'query';

/**
 * One interface for every embeddings backend. `key` names the vector space (provider + model +
 * dimension); it is stored with every chunk, and vectors with another key are never compared.
 */
export interface EmbeddingProvider {
  readonly provider: string;
  readonly model: string;
  readonly dimensions: number;
  /** `provider:model:dimensions`, e.g. `offline:hash-v1:768`. */
  readonly key: string;
  embed(texts: readonly string[], purpose: EmbeddingPurpose): Promise<number[][]>;
  /**
   * Set by an embedder that is pure CPU in this process (the offline one): the options a worker thread
   * rebuilds it from, so a large ingest can embed off the event loop (IngestSandbox.embed). Absent for an
   * embedder that waits on a service.
   */
  readonly threadOptions?: HashingEmbedderOptions;
}

export function embeddingKey(provider: string, model: string, dimensions: number): string {
  return `${provider}:${model}:${dimensions}`;
}

/** A failure of the embeddings backend, with a message an operator can act on. */
export class EmbeddingError extends Error {
  /** Marks it as an outside service's failure (→ upstream_error in an HTTP answer, see toAppException). */
  readonly upstream = 'embeddings';
  // Plain fields, not parameter properties: the ingest sandbox's thread loads this file, and under ts-jest
  // it does so with Node's type stripping, which has no parameter properties.
  readonly retryable: boolean;
  readonly status?: number;

  constructor(message: string, retryable = false, status?: number) {
    super(message);
    this.name = 'EmbeddingError';
    this.retryable = retryable;
    this.status = status;
  }
}

/** Formats a vector for a pgvector parameter (`'[1,2,3]'`). */
export function toVectorLiteral(vector: readonly number[]): string {
  return `[${vector.map((value) => (Number.isFinite(value) ? Number(value.toPrecision(7)) : 0)).join(',')}]`;
}
