import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel, type Transferable } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { AppConfig } from '../../../config/app-config.js';
import { APP_CONFIG } from '../../../config/app-config.token.js';
import { TextExtractionError } from '../../documents/text-extraction-error.js';
import type { DocumentKind } from '../../documents/document-type.js';
import type { ChunkerOptions, TextChunk } from '../chunking/chunker.js';
import type { VectorBatch } from '../embeddings/embedding-provider.js';
import type { HashingEmbedderOptions } from '../embeddings/offline-hashing.embedder.js';
import type {
  ChunkTask,
  EmbedTask,
  ExtractOutcome,
  ExtractTask,
  IngestThreadData,
  TimedTask,
} from './ingest-thread.js';

/** How long a task may wait for its thread to start and load its modules before its own time limit starts. */
const THREAD_START_ALLOWANCE_MS = 30_000;

/**
 * The sandbox for work on untrusted files: text extraction and chunking run in a bounded pool of worker
 * threads (piscina), never on the event loop that serves HTTP. In the embedded default the indexing
 * worker shares its process with the API, so this is what keeps `/api/health` answering while a hostile
 * file is processed. Each thread has a V8 heap limit (EXTRACT_MAX_MEMORY_MB): a file that needs more
 * kills only its thread. Each task has a time limit (EXTRACT_TIMEOUT_MS, from when its thread begins it):
 * piscina terminates the thread when the signal fires. Both end as a TextExtractionError naming the limit;
 * the pool starts a fresh thread for the next task. EXTRACT_CONCURRENCY threads at most, so extraction
 * cannot take every core from the queue's other work.
 */
@Injectable()
export class IngestSandbox implements OnModuleDestroy {
  private readonly logger = new Logger(IngestSandbox.name);
  private readonly pool: Piscina;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    const limits = config.extraction;
    this.pool = new Piscina({
      filename: threadEntry(),
      minThreads: 0,
      maxThreads: limits.concurrency,
      // Threads that idle are ended; a quiet instance keeps no extraction heap around.
      idleTimeout: 30_000,
      workerData: { nice: limits.threadNice } satisfies IngestThreadData,
      resourceLimits: {
        maxOldGenerationSizeMb: limits.maxMemoryMb,
        maxYoungGenerationSizeMb: Math.max(16, Math.min(64, Math.floor(limits.maxMemoryMb / 8))),
        stackSizeMb: 4,
      },
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.destroy().catch(() => undefined);
  }

  /**
   * The document's text, or a TextExtractionError naming the limit it broke. `handOver`: the caller has no further
   * use for `bytes`, so a Buffer that is a whole memory block of its own (a large file's) moves to the thread without
   * a copy on the event loop, and is empty here afterwards; otherwise the thread gets a copy.
   */
  async extract(kind: DocumentKind, bytes: Buffer, handOver = false): Promise<string> {
    const whole = handOver && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    const view = whole && bytes.buffer instanceof ArrayBuffer ? new Uint8Array(bytes.buffer) : new Uint8Array(bytes);
    const task: ExtractTask = { kind, bytes: view, limits: this.config.extraction };
    const outcome = await this.run<ExtractOutcome>('extract', task, [task.bytes.buffer as ArrayBuffer]);
    if (!outcome.ok) throw new TextExtractionError(outcome.message);
    return outcome.text;
  }

  /** chunkText in a thread: a large text's chunking is seconds of CPU the event loop must not spend. */
  async chunk(text: string, options: Partial<ChunkerOptions>): Promise<TextChunk[]> {
    const task: ChunkTask = { text, options };
    return this.run<TextChunk[]>('chunk', task);
  }

  /**
   * The offline embedder's vectors of an ingest batch (toVectorBatch: binary, which have a direction), computed
   * in a thread: a batch is enough CPU that, on the event loop, it delayed every request served meanwhile.
   */
  async embed(texts: string[], options: HashingEmbedderOptions): Promise<VectorBatch> {
    const task: EmbedTask = { texts, options };
    return this.run<VectorBatch>('embed', task);
  }

  private async run<T>(name: string, task: TimedTask, transferList: Transferable[] = []): Promise<T> {
    const { timeoutMs, maxMemoryMb } = this.config.extraction;
    // The clock starts when the thread begins the task: a fresh thread's start and module loading (seconds on a
    // busy machine) are the sandbox's own work, bounded apart by THREAD_START_ALLOWANCE_MS.
    const limit = new AbortController();
    const { port1: started, port2 } = new MessageChannel();
    let timer = setTimeout(() => limit.abort(), timeoutMs + THREAD_START_ALLOWANCE_MS);
    started.once('message', () => {
      clearTimeout(timer);
      timer = setTimeout(() => limit.abort(), timeoutMs);
    });
    try {
      return (await this.pool.run(
        { ...task, started: port2 },
        { name, signal: limit.signal, transferList: [...transferList, port2] },
      )) as T;
    } catch (error) {
      if (limit.signal.aborted) {
        this.logger.warn({ msg: 'sandbox task killed: time limit', task: name, timeoutMs });
        throw new TextExtractionError(
          `processing the file took longer than ${formatSeconds(timeoutMs)} (EXTRACT_TIMEOUT_MS)`,
        );
      }
      if (isOutOfMemory(error)) {
        this.logger.warn({ msg: 'sandbox task killed: memory limit', task: name, maxMemoryMb });
        throw new TextExtractionError(
          `processing the file needs more than ${maxMemoryMb} MiB of memory (EXTRACT_MAX_MEMORY_MB)`,
        );
      }
      throw error;
    } finally {
      clearTimeout(timer);
      started.close();
    }
  }
}

/** The compiled entry next to this file (dist), else the TypeScript source (ts-jest runs from src). */
function threadEntry(): string {
  const compiled = join(__dirname, 'ingest-thread.js');
  return existsSync(compiled) ? compiled : join(__dirname, 'ingest-thread.ts');
}

function isOutOfMemory(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code === 'ERR_WORKER_OUT_OF_MEMORY' || /out of memory|heap limit/i.test(message);
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
