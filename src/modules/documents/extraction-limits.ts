/** Limits on turning an untrusted upload into text; each has its variable in the typed config (AppConfig.extraction). */
export interface ExtractionLimits {
  /** EXTRACT_MAX_TEXT_BYTES: UTF-8 bytes of extracted text. */
  maxTextBytes: number;
  /** EXTRACT_MAX_PAGES: pages of a PDF. */
  maxPages: number;
  /** EXTRACT_MAX_ARCHIVE_ENTRIES: entries of a DOCX (ZIP) archive. */
  maxArchiveEntries: number;
  /** EXTRACT_MAX_COMPRESSION_RATIO: inflated / compressed size of a large archive entry. */
  maxCompressionRatio: number;
  /** EXTRACT_MAX_INFLATED_BYTES: all entries of an archive together, inflated. */
  maxInflatedBytes: number;
  /** EXTRACT_MAX_NESTING_DEPTH: open HTML elements at once. */
  maxNestingDepth: number;
}

const MIB = 1024 * 1024;

/** The defaults of the EXTRACT_* variables (API.md names the first ones: 50 MiB of text, 5,000 pages). */
export const DEFAULT_EXTRACTION_LIMITS: ExtractionLimits = {
  maxTextBytes: 50 * MIB,
  maxPages: 5000,
  maxArchiveEntries: 10_000,
  maxCompressionRatio: 100,
  maxInflatedBytes: 200 * MIB,
  maxNestingDepth: 1000,
};
