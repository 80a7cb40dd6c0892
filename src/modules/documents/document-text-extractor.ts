import { Injectable } from '@nestjs/common';
import { Parser } from 'htmlparser2';
import mammoth from 'mammoth';
import { extractText, getDocumentProxy } from 'unpdf';
import { decodeUtf8, type DocumentKind } from './document-type.js';

/** Why a document's text could not be extracted; the document ends `failed` with this message. */
export class TextExtractionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TextExtractionError';
  }
}

// Elements whose content is not document text.
const SKIPPED_HTML = new Set(['script', 'style', 'noscript', 'template', 'head', 'svg', 'iframe', 'object']);
// Elements that end a line of text.
const BLOCK_HTML = new Set([
  'address', 'article', 'aside', 'blockquote', 'br', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer',
  'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'table',
  'tr', 'td', 'th', 'ul', 'title',
]);

/**
 * Turns stored bytes into plain text. Pure (no database), so the upload path and the RAG indexer can
 * both call it. Failures are TextExtractionError with a sentence a user can act on; never a crash.
 */
@Injectable()
export class DocumentTextExtractor {
  async extract(kind: DocumentKind, bytes: Buffer): Promise<string> {
    switch (kind) {
      case 'pdf':
        return this.fromPdf(bytes);
      case 'docx':
        return this.fromDocx(bytes);
      case 'html':
        return htmlToText(this.utf8(bytes));
      default:
        return this.utf8(bytes);
    }
  }

  private utf8(bytes: Buffer): string {
    const text = decodeUtf8(bytes);
    if (text === undefined) throw new TextExtractionError('The file is not UTF-8 text');
    return text;
  }

  private async fromPdf(bytes: Buffer): Promise<string> {
    let text: string;
    try {
      // pdf.js takes ownership of the array it is given; hand it a copy, never the stored bytes.
      const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
      try {
        text = (await extractText(pdf, { mergePages: true })).text;
      } finally {
        await pdf.loadingTask.destroy().catch(() => undefined);
      }
    } catch (error) {
      throw new TextExtractionError(`The PDF could not be read: ${describe(error)}`);
    }
    if (text.trim() === '') throw new TextExtractionError('The PDF contains no extractable text (scanned pages are not supported)');
    return text;
  }

  private async fromDocx(bytes: Buffer): Promise<string> {
    try {
      const result = await mammoth.extractRawText({ buffer: bytes });
      return result.value;
    } catch (error) {
      throw new TextExtractionError(`The DOCX document could not be read: ${describe(error)}`);
    }
  }
}

/** Visible text of an HTML document, one block element per line, entities decoded, scripts and styles dropped. */
export function htmlToText(html: string): string {
  const parts: string[] = [];
  let skipDepth = 0;
  const parser = new Parser(
    {
      onopentagname(name) {
        if (SKIPPED_HTML.has(name)) skipDepth += 1;
        else if (BLOCK_HTML.has(name)) parts.push('\n');
      },
      onclosetag(name) {
        if (SKIPPED_HTML.has(name)) skipDepth = Math.max(0, skipDepth - 1);
        else if (BLOCK_HTML.has(name)) parts.push('\n');
      },
      ontext(text) {
        // Source line breaks are layout, not text: only block elements end a line.
        if (skipDepth === 0) parts.push(text.replace(/\s+/g, ' '));
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  return parts
    .join('')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > 300 ? `${message.slice(0, 300)}…` : message || 'unknown error';
}
