import { checkUtf8, decodeUtf8, type DocumentFormat } from './document-format.js';

export const JSON_FORMAT = {
  kind: 'json',
  mimeType: 'application/json',
  extensions: ['.json'],
  checkContent(bytes: Buffer): string | undefined {
    const notText = checkUtf8('json', bytes);
    if (notText) return notText;
    try {
      JSON.parse(decodeUtf8(bytes)!);
      return undefined;
    } catch {
      return 'the file is named .json but its content is not valid JSON';
    }
  },
  parser: 'utf8',
} as const satisfies DocumentFormat;
