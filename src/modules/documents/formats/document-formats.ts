import { CSV_FORMAT } from './csv.format.js';
import type { DocumentFormat } from './document-format.js';
import { DOCX_FORMAT } from './docx.format.js';
import { HTML_FORMAT } from './html.format.js';
import { JSON_FORMAT } from './json.format.js';
import { MARKDOWN_FORMAT } from './markdown.format.js';
import { PDF_FORMAT } from './pdf.format.js';
import { TEXT_FORMAT } from './text.format.js';

/** Every accepted upload type, in the order the "accepted:" list names them. A new format is one file and one line here. */
export const DOCUMENT_FORMATS = [
  TEXT_FORMAT,
  MARKDOWN_FORMAT,
  HTML_FORMAT,
  CSV_FORMAT,
  JSON_FORMAT,
  PDF_FORMAT,
  DOCX_FORMAT,
] as const;

export type DocumentKind = (typeof DOCUMENT_FORMATS)[number]['kind'];

const BY_KIND = new Map<string, DocumentFormat>(DOCUMENT_FORMATS.map((format) => [format.kind, format]));
const BY_MIME = new Map<string, DocumentFormat>(DOCUMENT_FORMATS.map((format) => [format.mimeType, format]));
const BY_EXTENSION = new Map<string, DocumentFormat>(
  DOCUMENT_FORMATS.flatMap((format) => format.extensions.map((extension) => [extension, format] as const)),
);

export function formatOfKind(kind: DocumentKind): DocumentFormat {
  return BY_KIND.get(kind)!;
}

/** By a lower-case extension with its dot. */
export function formatOfExtension(extension: string): DocumentFormat | undefined {
  return BY_EXTENSION.get(extension);
}

/** By a bare MIME type (no parameters). */
export function formatOfMime(mimeType: string): DocumentFormat | undefined {
  return BY_MIME.get(mimeType);
}

/** `txt, md, html, …`: the first extension of each format, for messages and the API description. */
export const ACCEPTED_TYPES = DOCUMENT_FORMATS.map((format) => format.extensions[0].slice(1)).join(', ');
