import { extname } from 'node:path';
import {
  ACCEPTED_TYPES,
  formatOfExtension,
  formatOfKind,
  formatOfMime,
  type DocumentKind,
} from './formats/document-formats.js';

export { ACCEPTED_TYPES, type DocumentKind };
export { decodeUtf8 } from './formats/document-format.js';

/** The MIME type a document of this kind is stored with. */
export function mimeOfKind(kind: DocumentKind): string {
  return formatOfKind(kind).mimeType;
}

/** The kind of a stored document, from the MIME type the upload check recorded. */
export function kindOfMime(mimeType: string): DocumentKind | undefined {
  return formatOfMime(mimeType)?.kind as DocumentKind | undefined;
}

export type TypeCheck = { ok: true; kind: DocumentKind; mimeType: string } | { ok: false; reason: string };

/**
 * What an upload is, decided by its name and confirmed by its bytes: both must agree. The extension
 * names the claimed type (the client's Content-Type only when the name has none); the content must
 * then look like it (each format's checkContent: %PDF for PDF, a ZIP container for DOCX, UTF-8 text
 * without NUL bytes for the text types, and parseable JSON for .json).
 */
export function detectDocumentType(fileName: string, declaredMime: string | undefined, bytes: Buffer): TypeCheck {
  const extension = extname(fileName).toLowerCase();
  const format =
    extension !== ''
      ? formatOfExtension(extension)
      : formatOfMime((declaredMime ?? '').split(';')[0].trim().toLowerCase());
  if (!format) {
    const reason =
      extension !== ''
        ? `files of type ${extension} are not accepted`
        : 'the file has no extension and its type is not accepted';
    return { ok: false, reason: `${reason}; accepted: ${ACCEPTED_TYPES}` };
  }
  const contentProblem = format.checkContent(bytes);
  if (contentProblem) return { ok: false, reason: contentProblem };
  return { ok: true, kind: format.kind as DocumentKind, mimeType: format.mimeType };
}
