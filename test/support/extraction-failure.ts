import { TextExtractionError } from '../../src/modules/documents/document-text-extractor.js';

/** The message of the TextExtractionError the promise rejects with (fails the test on anything else). */
export async function extractionFailure(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TextExtractionError);
  return (error as Error).message;
}
