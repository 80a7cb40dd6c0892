import { checkUtf8, type DocumentFormat } from './document-format.js';

export const CSV_FORMAT = {
  kind: 'csv',
  mimeType: 'text/csv',
  extensions: ['.csv'],
  checkContent: (bytes: Buffer) => checkUtf8('csv', bytes),
  parser: 'utf8',
} as const satisfies DocumentFormat;
