/*
 * Text extraction of untrusted uploads, bounded by ExtractionLimits. It runs inside the ingest sandbox's
 * worker threads (src/modules/rag/sandbox), which add the time and memory limits by killing the thread.
 * Outside a build (ts-jest) those threads load this file as TypeScript by stripping types, so it and
 * what it imports use only erasable syntax (no decorators, enums or parameter properties).
 * A broken limit is a TextExtractionError whose message names the limit; the document ends `failed`.
 */
import { Unzip, UnzipInflate, unzipSync } from 'fflate';
import { Tokenizer } from 'htmlparser2';
import mammoth from 'mammoth';
import { getDocumentProxy } from 'unpdf';
import { decodeUtf8 } from './formats/document-format.js';
import { formatOfKind, type DocumentKind } from './formats/document-formats.js';
import type { ExtractionLimits } from './extraction-limits.js';
import { TextExtractionError } from './text-extraction-error.js';

export type { ExtractionLimits };
export { TextExtractionError };

/** Counts the steps of loops whose length depends on the input (the linear-work spec reads it). */
export interface OperationCounter {
  ops: number;
}

const MIB = 1024 * 1024;
/** Entries smaller than this are never "bombs", whatever their ratio (a repetitive styles.xml). */
const RATIO_CHECK_MIN_BYTES = MIB;

/** The text to index of a document of this kind, by its format's parser (formats/). */
export async function extractText(kind: DocumentKind, bytes: Buffer, limits: ExtractionLimits): Promise<string> {
  let text: string;
  switch (formatOfKind(kind).parser) {
    case 'pdf':
      text = await pdfToText(bytes, limits);
      break;
    case 'docx':
      text = await docxToText(bytes, limits);
      break;
    case 'html':
      text = htmlToText(utf8(bytes), limits.maxNestingDepth);
      break;
    case 'utf8':
      text = utf8(bytes);
  }
  assertTextSize(Buffer.byteLength(text, 'utf8'), limits);
  return text;
}

function assertTextSize(bytes: number, limits: ExtractionLimits): void {
  if (bytes > limits.maxTextBytes) {
    throw new TextExtractionError(
      `the document expands to more than ${formatBytes(limits.maxTextBytes)} of text (EXTRACT_MAX_TEXT_BYTES)`,
    );
  }
}

function utf8(bytes: Buffer): string {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new TextExtractionError('the file is not UTF-8 text');
  return text;
}

// ---------------------------------------------------------------------------------------------- PDF

async function pdfToText(bytes: Buffer, limits: ExtractionLimits): Promise<string> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // pdf.js takes ownership of the array it is given; hand it a copy, never the caller's bytes.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (error) {
    throw new TextExtractionError(`the PDF could not be read: ${describe(error)}`);
  }
  try {
    if (pdf.numPages > limits.maxPages) {
      throw new TextExtractionError(
        `the PDF has ${pdf.numPages} pages, more than the limit of ${limits.maxPages} (EXTRACT_MAX_PAGES)`,
      );
    }
    const pages: string[] = [];
    let size = 0;
    for (let number = 1; number <= pdf.numPages; number += 1) {
      let pageText = '';
      try {
        const page = await pdf.getPage(number);
        const content = await page.getTextContent();
        for (const item of content.items as { str?: string; hasEOL?: boolean }[]) {
          if (typeof item.str !== 'string') continue;
          pageText += item.str;
          if (item.hasEOL) pageText += '\n';
        }
        page.cleanup();
      } catch (error) {
        throw new TextExtractionError(`the PDF could not be read: ${describe(error)}`);
      }
      // Stop at the limit instead of building the whole text first.
      size += Buffer.byteLength(pageText, 'utf8') + 1;
      assertTextSize(size, limits);
      pages.push(pageText);
    }
    const text = pages.join('\n');
    if (text.trim() === '')
      throw new TextExtractionError('the PDF contains no extractable text (scanned pages are not supported)');
    return text;
  } finally {
    await pdf.loadingTask.destroy().catch(() => undefined);
  }
}

// --------------------------------------------------------------------------------------------- DOCX

async function docxToText(bytes: Buffer, limits: ExtractionLimits): Promise<string> {
  checkArchive(bytes, limits);
  try {
    return (await mammoth.extractRawText({ buffer: bytes })).value;
  } catch (error) {
    throw new TextExtractionError(`the DOCX document could not be read: ${describe(error)}`);
  }
}

/**
 * A ZIP is a zip bomb candidate until proven otherwise. First its central directory (what the archive
 * claims: entry count, sizes, ratios), without inflating anything; then every entry is inflated as a
 * stream and thrown away, stopping the moment it produces more than it claimed or more than a limit
 * allows, since the claimed sizes may lie. Only then does mammoth (which inflates on its own) see it.
 */
export function checkArchive(bytes: Uint8Array, limits: ExtractionLimits): void {
  let entries = 0;
  let claimedTotal = 0;
  const claimed = new Map<string, number>();
  try {
    unzipSync(bytes, {
      filter(file) {
        entries += 1;
        if (entries > limits.maxArchiveEntries) {
          throw new TextExtractionError(
            `the archive has more than ${limits.maxArchiveEntries} entries (EXTRACT_MAX_ARCHIVE_ENTRIES)`,
          );
        }
        assertEntryRatio(file.name, file.originalSize, file.size, limits);
        claimedTotal += file.originalSize;
        assertInflatedTotal(claimedTotal, limits);
        claimed.set(file.name, file.originalSize);
        return false;
      },
    });
  } catch (error) {
    if (error instanceof TextExtractionError) throw error;
    throw new TextExtractionError(`the DOCX document could not be read: ${describe(error)}`);
  }

  let failure: TextExtractionError | undefined;
  let inflatedTotal = 0;
  const unzip = new Unzip((file) => {
    const declared = claimed.get(file.name);
    const compressed = file.size;
    let inflated = 0;
    file.ondata = (error, chunk) => {
      if (failure) return;
      if (error) {
        failure = new TextExtractionError(`the DOCX document could not be read: ${describe(error)}`);
        return;
      }
      inflated += chunk.length;
      inflatedTotal += chunk.length;
      try {
        assertInflatedTotal(inflatedTotal, limits);
        if (declared !== undefined && inflated > declared) {
          throw new TextExtractionError(
            `the archive entry ${file.name} inflates to more than its declared size (a zip bomb)`,
          );
        }
        if (compressed !== undefined) assertEntryRatio(file.name, inflated, compressed, limits);
      } catch (limitError) {
        failure = limitError as TextExtractionError;
        file.terminate();
      }
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  try {
    // Fed in slices so a failure stops the inflating early rather than after the whole archive.
    const slice = 64 * 1024;
    for (let at = 0; at < bytes.length && !failure; at += slice) {
      unzip.push(bytes.subarray(at, Math.min(bytes.length, at + slice)), at + slice >= bytes.length);
    }
  } catch (error) {
    if (!failure) failure = new TextExtractionError(`the DOCX document could not be read: ${describe(error)}`);
  }
  if (failure) throw failure;
}

function assertEntryRatio(name: string, inflated: number, compressed: number, limits: ExtractionLimits): void {
  if (inflated >= RATIO_CHECK_MIN_BYTES && inflated > Math.max(compressed, 1) * limits.maxCompressionRatio) {
    throw new TextExtractionError(
      `the archive entry ${name} expands more than ${limits.maxCompressionRatio} times its compressed size (EXTRACT_MAX_COMPRESSION_RATIO)`,
    );
  }
}

function assertInflatedTotal(total: number, limits: ExtractionLimits): void {
  if (total > limits.maxInflatedBytes) {
    throw new TextExtractionError(
      `the archive expands to more than ${formatBytes(limits.maxInflatedBytes)} (EXTRACT_MAX_INFLATED_BYTES)`,
    );
  }
}

// --------------------------------------------------------------------------------------------- HTML

// Elements whose content is not document text.
const SKIPPED_HTML = new Set(['script', 'style', 'noscript', 'template', 'head', 'svg', 'iframe', 'object']);
// Elements that end a line of text.
const BLOCK_HTML = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'br',
  'dd',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'tr',
  'td',
  'th',
  'ul',
  'title',
]);
// Elements without content: they never nest.
const VOID_HTML = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
// Elements whose end tag HTML lets authors omit: a list of 10,000 <li> without </li> is not 10,000 deep.
const OPTIONAL_END_HTML = new Set([
  'p',
  'li',
  'dt',
  'dd',
  'tr',
  'td',
  'th',
  'thead',
  'tbody',
  'tfoot',
  'option',
  'optgroup',
  'rb',
  'rt',
  'rp',
  'colgroup',
  'caption',
  'html',
  'body',
  'head',
]);

/**
 * Visible text of an HTML document, one block element per line, entities decoded, scripts and styles
 * dropped. Built on htmlparser2's Tokenizer, not its Parser: the Parser keeps open elements in an array
 * it shifts and unshifts at the front and searches on every end tag, which is quadratic in the nesting
 * depth (400,000 nested <div> froze the process). Here each token costs O(1); no element tree is kept,
 * only counters. Nesting deeper than `maxNestingDepth` open elements is refused.
 */
export function htmlToText(
  html: string,
  maxNestingDepth = Number.POSITIVE_INFINITY,
  counter?: OperationCounter,
): string {
  const parts: string[] = [];
  let skipDepth = 0;
  let depth = 0;
  const tagName = (start: number, end: number) => html.slice(start, end).toLowerCase();
  const noop = () => undefined;
  const tokenizer = new Tokenizer(
    { decodeEntities: true },
    {
      onopentagname(start, end) {
        if (counter) counter.ops += 1;
        const name = tagName(start, end);
        if (name === 'body') skipDepth = 0; // a <head> left open ends here
        if (!VOID_HTML.has(name) && !OPTIONAL_END_HTML.has(name)) {
          depth += 1;
          if (depth > maxNestingDepth) {
            throw new TextExtractionError(
              `the markup nests more than ${maxNestingDepth} elements deep (EXTRACT_MAX_NESTING_DEPTH)`,
            );
          }
        }
        if (SKIPPED_HTML.has(name)) skipDepth += 1;
        else if (BLOCK_HTML.has(name)) parts.push('\n');
      },
      onclosetag(start, end) {
        if (counter) counter.ops += 1;
        const name = tagName(start, end);
        if (!VOID_HTML.has(name) && !OPTIONAL_END_HTML.has(name)) depth = Math.max(0, depth - 1);
        if (SKIPPED_HTML.has(name)) skipDepth = Math.max(0, skipDepth - 1);
        else if (BLOCK_HTML.has(name)) parts.push('\n');
      },
      onselfclosingtag() {
        // `<div/>` is not self-closing in HTML; nothing to undo.
      },
      ontext(start, end) {
        if (counter) counter.ops += 1;
        // Source line breaks are layout, not text: only block elements end a line.
        if (skipDepth === 0) parts.push(html.slice(start, end).replace(/\s+/g, ' '));
      },
      ontextentity(codepoint) {
        if (counter) counter.ops += 1;
        if (skipDepth === 0) parts.push(String.fromCodePoint(codepoint));
      },
      onattribdata: noop,
      onattribentity: noop,
      onattribend: noop,
      onattribname: noop,
      oncdata: noop,
      oncomment: noop,
      ondeclaration: noop,
      onend: noop,
      onopentagend: noop,
      onprocessinginstruction: noop,
    },
  );
  tokenizer.write(html);
  tokenizer.end();
  const lines = parts.join('').split('\n');
  const kept: string[] = [];
  for (const line of lines) {
    if (counter) counter.ops += 1;
    const clean = line.replace(/\s+/g, ' ').trim();
    if (clean !== '') kept.push(clean);
  }
  return kept.join('\n');
}

// ------------------------------------------------------------------------------------------ helpers

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > 300 ? `${message.slice(0, 300)}…` : message || 'unknown error';
}

function formatBytes(bytes: number): string {
  if (bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
