import type { DocumentFormat } from './document-format.js';

export const PDF_FORMAT = {
  kind: 'pdf',
  mimeType: 'application/pdf',
  extensions: ['.pdf'],
  // The PDF header may follow a little junk; readers look in the first kilobyte.
  checkContent: (bytes: Buffer) =>
    bytes.subarray(0, 1024).indexOf('%PDF-') === -1 ? 'the file is named .pdf but its content is not a PDF' : undefined,
  parser: 'pdf',
} as const satisfies DocumentFormat;
