/**
 * A file that cannot be turned into text: the document ends `failed` with this message.
 * Its own file so the main thread (sandbox service, indexing runner) can name it without loading the
 * extractor's parsers (pdf.js, mammoth, htmlparser2, fflate), which only the ingest threads run.
 * Erasable syntax only: the ingest threads load it as TypeScript outside a build (see document-text-extractor.ts).
 */
export class TextExtractionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TextExtractionError';
  }
}
