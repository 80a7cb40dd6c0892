import { checkUtf8, type DocumentFormat } from './document-format.js';

/** Also the type of documents written as text through the API and the tools. */
export const MARKDOWN_FORMAT = {
  kind: 'markdown',
  mimeType: 'text/markdown',
  extensions: ['.md', '.markdown'],
  checkContent: (bytes: Buffer) => checkUtf8('markdown', bytes),
  parser: 'utf8',
} as const satisfies DocumentFormat;
