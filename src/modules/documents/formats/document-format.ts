import { isUtf8 } from 'node:buffer';

/**
 * One accepted upload type. Every format is one file in this folder listed in `document-formats.ts`; the upload
 * check, the stored MIME type, the "accepted:" message, the OpenAPI description and the text extraction all read
 * the list (docs/adding-a-file-type.md).
 *
 * This folder is loaded by the ingest sandbox's threads too (through document-text-extractor.ts), which strip
 * types without a build: erasable TypeScript only (no enums, decorators or parameter properties).
 */
export interface DocumentFormat {
  /** The format's name in code (DocumentKind) and in messages. */
  readonly kind: string;
  /** The MIME type recorded on the document; a stored document finds its format again by it. */
  readonly mimeType: string;
  /** Lower-case file extensions with the dot; the first one names the format in the "accepted:" list. */
  readonly extensions: readonly string[];
  /** Why the bytes are not this format (the upload is refused with 415), or undefined when they look like it. */
  checkContent(bytes: Buffer): string | undefined;
  /**
   * Which parser of document-text-extractor.ts turns the bytes into the text that is indexed: `utf8` (the text
   * as it is), `html`, `pdf` or `docx`. A format that needs a new parser adds it there, where every parser of
   * untrusted bytes runs inside the ingest sandbox under the EXTRACT_* limits.
   */
  readonly parser: TextParser;
}

export type TextParser = 'utf8' | 'html' | 'pdf' | 'docx';

/** Strict UTF-8 without NUL bytes (a binary file renamed .txt fails here), checked without decoding the bytes. */
export function isUtf8Text(bytes: Uint8Array): boolean {
  return !bytes.includes(0) && isUtf8(bytes);
}

/** The text of strict UTF-8 bytes without NUL bytes (see isUtf8Text); a leading BOM is dropped. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  if (!isUtf8Text(bytes)) return undefined;
  const text = new TextDecoder('utf-8').decode(bytes);
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The content check of the text formats: UTF-8 text, named after the format in the refusal. */
export function checkUtf8(kind: string, bytes: Buffer): string | undefined {
  // Validated, not decoded: the upload's check runs on the event loop, and a large file's text is decoded in the sandbox.
  return isUtf8Text(bytes) ? undefined : `the file is named as ${kind} text but its content is not UTF-8 text`;
}
