export const DOCUMENT_STATUSES = ['uploaded', 'processing', 'indexed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** `upload`: bytes a user uploaded (deduplicated per author and project); `text`: content written through a tool. */
export type DocumentOrigin = 'upload' | 'text';

/** A document as the services see it (documents.repository.ts loads it); the bytes and the text are loaded only when asked for. */
export interface Document {
  id: string;
  /** Null for a document created through a tool without a project. */
  projectId: string | null;
  authorId: string;
  title: string;
  mimeType: string;
  sizeBytes: number;
  sha256: string;
  isPublic: boolean;
  origin: DocumentOrigin;
  status: DocumentStatus;
  /** Why extraction or indexing failed, when status is `failed`. */
  error: string | null;
  /** Maintained by the RAG indexer; while `processing`, the chunks written so far. */
  chunkCount: number;
  /** Chunks the running indexing will write (null until the text is chunked). */
  chunksTotal: number | null;
  indexedAt: Date | null;
  // Milliseconds, the precision of the list cursor (see migration ListTimestampsMilliseconds).
  createdAt: Date;
  updatedAt: Date;
}
