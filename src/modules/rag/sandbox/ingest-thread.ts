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
import { readlinkSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { getPriority, setPriority } from 'node:os';
import { type MessagePort, workerData } from 'node:worker_threads';
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

/** What IngestSandbox hands every thread it starts. */
export interface IngestThreadData {
  /** EXTRACT_THREAD_NICE. */
  nice: number;
}

lowerThreadPriority((workerData as IngestThreadData | undefined)?.nice ?? 0);

/**
 * Extraction, chunking and embedding are CPU the HTTP event loop must not wait behind: on a machine whose cores
 * are all busy (PostgreSQL indexing the previous batch, other processes), a sandbox thread at the process's own
 * priority takes a core's time slice from the loop as often as the loop takes it from the thread. Linux applies
 * a nice value to a single thread when setpriority is given the thread's id (/proc/thread-self names it); the
 * thread then only yields when there is contention, and runs at full speed otherwise. Never raises a thread
 * above the process's own nice value. Elsewhere (or if the kernel refuses) the thread keeps the process's priority.
 */
function lowerThreadPriority(nice: number): void {
  if (nice <= 0 || process.platform !== 'linux') return;
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0 && getPriority(threadId) < nice) setPriority(threadId, nice);
  } catch {
    // Not fatal: the limits of the sandbox do not depend on it.
  }
}

/**
 * What every task carries: the port it says on that its work begins (IngestSandbox times the task from there, not
 * from the thread's start and the loading of its modules, which are the sandbox's own work, not the file's).
 */
export interface TimedTask {
  started?: MessagePort;
}

function begin(task: TimedTask): void {
  task.started?.postMessage(true);
  task.started?.close();
}

export interface ExtractTask extends TimedTask {
  kind: DocumentKind;
  bytes: Uint8Array;
  limits: ExtractionLimits;
}

/** Crosses the thread boundary as data: an Error thrown here would lose its class on the way. */
export type ExtractOutcome = { ok: true; text: string } | { ok: false; message: string };

export async function extract(task: ExtractTask): Promise<ExtractOutcome> {
  const { extractText, TextExtractionError } = await import('../../documents/document-text-extractor.js');
  begin(task);
  try {
    const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
    return { ok: true, text: await extractText(task.kind, bytes, task.limits) };
  } catch (error) {
    if (error instanceof TextExtractionError) return { ok: false, message: error.message };
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `the file could not be read: ${message.slice(0, 300) || 'unknown error'}` };
  }
}

export interface ChunkTask extends TimedTask {
  text: string;
  options: Partial<ChunkerOptions>;
}

export async function chunk(task: ChunkTask): Promise<TextChunk[]> {
  const { chunkText } = await import('../chunking/chunker.js');
  begin(task);
  return chunkText(task.text, task.options);
}

export interface EmbedTask extends TimedTask {
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
  begin(task);
  return toVectorBatch(
    task.texts.map((text) => embedder!.instance.embedOne(text)),
    task.options.dimensions,
  );
}
