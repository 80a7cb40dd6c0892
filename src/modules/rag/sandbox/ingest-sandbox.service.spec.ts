import { readdirSync } from 'node:fs';
import { getPriority } from 'node:os';
import { docxOf, pdfWithPages } from '../../../../bench/document-builders.js';
import type { AppConfig } from '../../../config/app-config.js';
import { extractionFailure } from '../../../../test/support/extraction-failure.js';
import { DEFAULT_EXTRACTION_LIMITS } from '../../documents/extraction-limits.js';
import { IngestSandbox } from './ingest-sandbox.service.js';

const MIB = 1024 * 1024;

function sandbox(extraction: Partial<AppConfig['extraction']>): IngestSandbox {
  const config = {
    extraction: {
      ...DEFAULT_EXTRACTION_LIMITS,
      maxCompressionRatio: 100_000,
      maxInflatedBytes: 2048 * MIB,
      timeoutMs: 60_000,
      maxMemoryMb: 512,
      concurrency: 1,
      threadNice: 0,
      ...extraction,
    },
  } as AppConfig;
  return new IngestSandbox(config);
}

const failure = extractionFailure;

/**
 * The sandbox's own limits, on real worker threads (here they run the TypeScript sources, as under
 * ts-jest the app does): a heap the file needs more of, a time it takes longer than. Each kills the
 * thread, fails with a message naming the limit, and leaves the pool able to take the next file.
 */
describe('IngestSandbox', () => {
  // A DOCX whose document.xml is ~56 MB of XML (allowed by the archive limits set above): mammoth's
  // DOM of it needs far more than 64 MiB of heap and several seconds.
  const heavyDocx = docxOf(Array.from({ length: 200_000 }, (_, i) => `paragraph ${i} ${'word '.repeat(45)}`));

  it('kills a thread that needs more than EXTRACT_MAX_MEMORY_MB and serves the next file', async () => {
    const pool = sandbox({ maxMemoryMb: 64 });
    try {
      expect(await failure(pool.extract('docx', heavyDocx))).toBe(
        'processing the file needs more than 64 MiB of memory (EXTRACT_MAX_MEMORY_MB)',
      );
      expect(
        await pool.extract(
          'pdf',
          pdfWithPages(2, (n) => `after the crash ${n}`),
        ),
      ).toBe('after the crash 1\nafter the crash 2');
    } finally {
      await pool.onModuleDestroy();
    }
  }, 120_000);

  it('kills a thread that takes longer than EXTRACT_TIMEOUT_MS and serves the next file', async () => {
    // Far too short for the heavy file; the next file's fresh thread starts outside its time limit, so a busy machine
    // slows that start without failing the file.
    const pool = sandbox({ timeoutMs: 2500, maxMemoryMb: 2048 });
    try {
      expect(await failure(pool.extract('docx', heavyDocx))).toBe(
        'processing the file took longer than 2500 ms (EXTRACT_TIMEOUT_MS)',
      );
      expect(await pool.extract('html', Buffer.from('<p>still here</p>'))).toBe('still here');
    } finally {
      await pool.onModuleDestroy();
    }
  }, 120_000);

  it("counts a task's time from when its thread begins it, not from the thread's start", async () => {
    // A fresh thread loads the extraction modules (pdf.js, mammoth, the HTML parser) before it begins: far more
    // than 100 ms, which the file itself needs far less than.
    const pool = sandbox({ timeoutMs: 100 });
    try {
      expect(await pool.extract('html', Buffer.from('<p>first file of a fresh thread</p>'))).toBe(
        'first file of a fresh thread',
      );
    } finally {
      await pool.onModuleDestroy();
    }
  }, 60_000);

  it("moves a handed-over file's memory to the thread without a copy, and copies a file its caller keeps", async () => {
    const pool = sandbox({});
    try {
      const text = 'words of a file read for its extraction '.repeat(400);
      const kept = Buffer.from(text);
      expect(await pool.extract('text', kept)).toBe(text);
      expect(kept.toString()).toBe(text);
      // A Buffer that is a whole memory block of its own (a large file read back is one): taken over, empty here.
      const handed = Buffer.alloc(Buffer.byteLength(text), text);
      expect(handed.byteLength).toBe(handed.buffer.byteLength);
      expect(await pool.extract('text', handed, true)).toBe(text);
      expect(handed.buffer.byteLength).toBe(0);
      // A slice of a shared pool (a small Buffer) is copied even when handed over.
      const small = Buffer.from('a small file');
      expect(await pool.extract('text', small, true)).toBe('a small file');
      expect(small.toString()).toBe('a small file');
    } finally {
      await pool.onModuleDestroy();
    }
  }, 60_000);

  it('chunks in a thread exactly as in-process chunking does', async () => {
    const pool = sandbox({});
    try {
      const text = 'A sentence about chunking. '.repeat(500);
      const { chunkText } = await import('../chunking/chunker.js');
      expect(await pool.chunk(text, { targetChars: 300, overlapChars: 50 })).toEqual(
        chunkText(text, { targetChars: 300, overlapChars: 50 }),
      );
    } finally {
      await pool.onModuleDestroy();
    }
  }, 60_000);

  it('embeds in a thread exactly as the in-process offline embedder does', async () => {
    const pool = sandbox({});
    try {
      const { OfflineHashingEmbedder } = await import('../embeddings/offline-hashing.embedder.js');
      const { fromVectorBatch } = await import('../embeddings/embedding-provider.js');
      const embedder = new OfflineHashingEmbedder({ dimensions: 64 });
      const texts = ['Regulated cells regulate the cell cycle.', 'Über naïve café', '... ,;'];
      const expected = texts
        .map((text) => embedder.embedOne(text))
        .map((vector) => (vector.some((v) => v !== 0) ? vector.map(Math.fround) : null));
      expect(expected[2]).toBeNull();
      expect(fromVectorBatch(await pool.embed(texts, embedder.threadOptions))).toEqual(expected);
    } finally {
      await pool.onModuleDestroy();
    }
  }, 60_000);

  // Linux only: elsewhere the threads keep the process's priority.
  (process.platform === 'linux' ? it : it.skip)(
    'runs its threads at EXTRACT_THREAD_NICE and leaves the event loop at the process priority',
    async () => {
      const own = getPriority(process.pid);
      const nice = Math.min(19, own + 7);
      const niceOfThreads = () => readdirSync('/proc/self/task').map((tid) => getPriority(Number(tid)));
      expect(niceOfThreads()).not.toContain(nice);
      const pool = sandbox({ threadNice: nice });
      try {
        await pool.chunk('A sentence about chunking. '.repeat(10), { targetChars: 100, overlapChars: 10 });
        expect(niceOfThreads()).toContain(nice);
        expect(getPriority(process.pid)).toBe(own);
      } finally {
        await pool.onModuleDestroy();
      }
    },
    60_000,
  );
});
