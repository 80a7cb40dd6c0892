import { checkUtf8, type DocumentFormat } from './document-format.js';

export const HTML_FORMAT = {
  kind: 'html',
  mimeType: 'text/html',
  extensions: ['.html', '.htm'],
  checkContent: (bytes: Buffer) => checkUtf8('html', bytes),
  parser: 'html',
} as const satisfies DocumentFormat;
