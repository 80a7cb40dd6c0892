import type { DocumentFormat } from './document-format.js';

const ZIP_SIGNATURE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

export const DOCX_FORMAT = {
  kind: 'docx',
  mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  extensions: ['.docx'],
  checkContent: (bytes: Buffer) =>
    bytes.subarray(0, 4).equals(ZIP_SIGNATURE)
      ? undefined
      : 'the file is named .docx but its content is not a DOCX (ZIP) document',
  parser: 'docx',
} as const satisfies DocumentFormat;
