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

/**
 * A query vector as a parameter in pgvector's binary format (`vector_recv`: int16 dimension count, int16 unused,
 * then float4 values, network byte order). Sent as a Buffer, node-postgres passes it in binary, so neither side
 * formats or parses hundreds of decimals (toVectorLiteral here, and a `::vector` parameter in the server, which a
 * hybrid search has three of). The values are float4, as the stored chunk vectors (toVectorBatch).
 */
export function toVectorParam(vector: readonly number[]): Buffer {
  const param = Buffer.allocUnsafe(4 + vector.length * 4);
  param.writeInt16BE(vector.length, 0);
  param.writeInt16BE(0, 2);
  for (const [i, value] of vector.entries()) param.writeFloatBE(Number.isFinite(value) ? value : 0, 4 + i * 4);
  return param;
}

/**
 * One batch's vectors as a parameter in PostgreSQL's binary format of a one-dimensional `real[]` (n × dims
 * float4, vector i at elements i·dims+1 … (i+1)·dims), with which vectors have a direction (an all-zero vector
 * has none and is stored as NULL). Sent as a Buffer, node-postgres passes it in binary, so no batch's numbers are
 * formatted as decimal text in the sandbox thread nor parsed back by PostgreSQL, the bulk of both costs
 * (docs/perf/rag.md); the event loop's share is the same either way.
 */
export interface VectorBatch {
  dimensions: number;
  values: Uint8Array;
  present: boolean[];
}

const FLOAT4_OID = 700;
const ARRAY_HEADER_BYTES = 20; // ndim, has-nulls flag, element type, then length and lower bound of the one dimension

export function toVectorBatch(vectors: readonly (readonly number[])[], dimensions: number): VectorBatch {
  const count = vectors.length * dimensions;
  const values = new Uint8Array(ARRAY_HEADER_BYTES + count * 8);
  const view = new DataView(values.buffer);
  view.setInt32(0, 1);
  view.setInt32(4, 0);
  view.setInt32(8, FLOAT4_OID);
  view.setInt32(12, count);
  view.setInt32(16, 1);
  const present: boolean[] = [];
  let at = ARRAY_HEADER_BYTES;
  for (const vector of vectors) {
    if (vector.length !== dimensions)
      throw new Error(`a vector of ${vector.length} dimensions in a batch of ${dimensions}`);
    let nonZero = false;
    for (const value of vector) {
      const finite = Number.isFinite(value) ? value : 0;
      if (finite !== 0) nonZero = true;
      view.setInt32(at, 4);
      view.setFloat32(at + 4, finite);
      at += 8;
    }
    present.push(nonZero);
  }
  return { dimensions, values, present };
}

/** The vectors of a batch back as numbers (float4 precision; null where none was present), for tests. */
export function fromVectorBatch(batch: VectorBatch): (number[] | null)[] {
  const view = new DataView(batch.values.buffer, batch.values.byteOffset, batch.values.byteLength);
  return batch.present.map((present, index) =>
    present
      ? Array.from({ length: batch.dimensions }, (_, i) =>
          view.getFloat32(ARRAY_HEADER_BYTES + (index * batch.dimensions + i) * 8 + 4),
        )
      : null,
  );
}
