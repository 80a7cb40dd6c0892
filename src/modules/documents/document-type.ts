import { extname } from 'node:path';

export const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

export type DocumentKind = 'text' | 'markdown' | 'html' | 'csv' | 'json' | 'pdf' | 'docx';

export const MIME_BY_KIND: Record<DocumentKind, string> = {
  text: 'text/plain',
  markdown: 'text/markdown',
  html: 'text/html',
  csv: 'text/csv',
  json: 'application/json',
  pdf: 'application/pdf',
  docx: DOCX_MIME,
};

const KIND_BY_EXTENSION: Record<string, DocumentKind> = {
  '.txt': 'text',
  '.text': 'text',
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.html': 'html',
  '.htm': 'html',
  '.csv': 'csv',
  '.json': 'json',
  '.pdf': 'pdf',
  '.docx': 'docx',
};

const KIND_BY_MIME: Record<string, DocumentKind> = Object.fromEntries(
  Object.entries(MIME_BY_KIND).map(([kind, mime]) => [mime, kind as DocumentKind]),
);

/** The kind of a stored document, from the MIME type the upload check recorded. */
export function kindOfMime(mimeType: string): DocumentKind | undefined {
  return KIND_BY_MIME[mimeType];
}

export const ACCEPTED_TYPES = 'txt, md, html, csv, json, pdf, docx';

export type TypeCheck = { ok: true; kind: DocumentKind; mimeType: string } | { ok: false; reason: string };

/**
 * What an upload is, decided by its name and confirmed by its bytes: both must agree. The extension
 * names the claimed type (the client's Content-Type only when the name has none); the content must
 * then look like it: %PDF for PDF, a ZIP container for DOCX, UTF-8 text without NUL bytes for the text
 * types, and parseable JSON for .json.
 */
export function detectDocumentType(fileName: string, declaredMime: string | undefined, bytes: Buffer): TypeCheck {
  const extension = extname(fileName).toLowerCase();
  let kind: DocumentKind | undefined;
  if (extension !== '') {
    kind = KIND_BY_EXTENSION[extension];
    if (!kind) return { ok: false, reason: `files of type ${extension} are not accepted; accepted: ${ACCEPTED_TYPES}` };
  } else {
    kind = KIND_BY_MIME[(declaredMime ?? '').split(';')[0].trim().toLowerCase()];
    if (!kind) return { ok: false, reason: `the file has no extension and its type is not accepted; accepted: ${ACCEPTED_TYPES}` };
  }
  const contentProblem = checkContent(kind, bytes);
  if (contentProblem) return { ok: false, reason: contentProblem };
  return { ok: true, kind, mimeType: MIME_BY_KIND[kind] };
}

function checkContent(kind: DocumentKind, bytes: Buffer): string | undefined {
  switch (kind) {
    case 'pdf': {
      // The PDF header may follow a little junk; readers look in the first kilobyte.
      const at = bytes.subarray(0, 1024).indexOf('%PDF-');
      return at === -1 ? 'the file is named .pdf but its content is not a PDF' : undefined;
    }
    case 'docx':
      return bytes.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04])) ? undefined : 'the file is named .docx but its content is not a DOCX (ZIP) document';
    default: {
      const text = decodeUtf8(bytes);
      if (text === undefined) return `the file is named as ${kind} text but its content is not UTF-8 text`;
      if (kind === 'json') {
        try {
          JSON.parse(text);
        } catch {
          return 'the file is named .json but its content is not valid JSON';
        }
      }
      return undefined;
    }
  }
}

/** Strict UTF-8 without NUL bytes (a binary file renamed .txt fails here); a leading BOM is dropped. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch {
    return undefined;
  }
}
