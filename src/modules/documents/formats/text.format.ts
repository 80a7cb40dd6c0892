import { checkUtf8, type DocumentFormat } from './document-format.js';

export const TEXT_FORMAT = {
  kind: 'text',
  mimeType: 'text/plain',
  extensions: ['.txt', '.text'],
  checkContent: (bytes: Buffer) => checkUtf8('text', bytes),
  parser: 'utf8',
} as const satisfies DocumentFormat;
