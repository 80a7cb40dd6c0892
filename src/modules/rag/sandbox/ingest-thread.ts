/*
 * Entry of the ingest sandbox's worker threads (piscina loads it; IngestSandbox owns the pool). Each
 * named export is one kind of task. Nothing here trusts its input: the thread is the blast wall, and
 * the pool kills it when it breaks its heap limit or its time.
 *
 * Run from dist/ this is compiled CommonJS and every import resolves to a .js file. Run from src/
 * (ts-jest; the thread is a plain Node thread that jest does not transform) Node loads the .ts files
 * by stripping their types, but the sources name siblings as './x.js' (nodenext style): the resolve
 * hook below maps such a specifier to the .ts file when no .js exists. The modules are imported
 * dynamically so the hook is in place before they are resolved.
 */
import { registerHooks } from 'node:module';
import type { DocumentKind } from '../../documents/document-type.js';
import type { ExtractionLimits } from '../../documents/document-text-extractor.js';
import type { ChunkerOptions, TextChunk } from '../chunking/chunker.js';
import type { VectorBatch } from '../embeddings/embedding-provider.js';
import type { HashingEmbedderOptions, OfflineHashingEmbedder } from '../embeddings/offline-hashing.embedder.js';

registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (error) {
      if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw error;
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
  },
});

export interface ExtractTask {
  kind: DocumentKind;
  bytes: Uint8Array;
  limits: ExtractionLimits;
}

/** Crosses the thread boundary as data: an Error thrown here would lose its class on the way. */
export type ExtractOutcome = { ok: true; text: string } | { ok: false; message: string };

export async function extract(task: ExtractTask): Promise<ExtractOutcome> {
  const { extractText, TextExtractionError } = await import('../../documents/document-text-extractor.js');
  try {
    const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
    return { ok: true, text: await extractText(task.kind, bytes, task.limits) };
  } catch (error) {
    if (error instanceof TextExtractionError) return { ok: false, message: error.message };
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `the file could not be read: ${message.slice(0, 300) || 'unknown error'}` };
  }
}

export interface ChunkTask {
  text: string;
  options: Partial<ChunkerOptions>;
}

export async function chunk(task: ChunkTask): Promise<TextChunk[]> {
  const { chunkText } = await import('../chunking/chunker.js');
  return chunkText(task.text, task.options);
}

export interface EmbedTask {
  texts: string[];
  options: HashingEmbedderOptions;
}

/** The thread's embedder, built once per thread and options (the pool reuses its threads). */
let embedder: { key: string; instance: OfflineHashingEmbedder } | undefined;

/**
 * The offline embedder's vectors of `texts`, already in the binary form the INSERT sends (toVectorBatch): what
 * crosses back to the event loop is one byte array, not 64 strings of 768 formatted numbers.
 */
export async function embed(task: EmbedTask): Promise<VectorBatch> {
  const key = JSON.stringify(task.options);
  if (embedder?.key !== key) {
    const { OfflineHashingEmbedder } = await import('../embeddings/offline-hashing.embedder.js');
    embedder = { key, instance: new OfflineHashingEmbedder(task.options) };
  }
  const { toVectorBatch } = await import('../embeddings/embedding-provider.js');
  return toVectorBatch(
    task.texts.map((text) => embedder!.instance.embedOne(text)),
    task.options.dimensions,
  );
}
