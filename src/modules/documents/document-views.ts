import type { Document, DocumentStatus } from './document.model.js';

/** Area B shape (camelCase). */
export interface DocumentView {
  id: string;
  projectId: string | null;
  title: string;
  mimeType: string;
  sizeBytes: number;
  sha256: string;
  isPublic: boolean;
  authorId: string;
  status: DocumentStatus;
  error: string | null;
  chunkCount: number;
  /** While `processing`: chunks written of the chunks the text makes (null before it is chunked). */
  progress: { chunksIndexed: number; chunksTotal: number } | null;
  createdAt: string;
  updatedAt: string;
  indexedAt: string | null;
}

export function toDocumentView(document: Document): DocumentView {
  return {
    id: document.id,
    projectId: document.projectId,
    title: document.title,
    mimeType: document.mimeType,
    sizeBytes: document.sizeBytes,
    sha256: document.sha256,
    isPublic: document.isPublic,
    authorId: document.authorId,
    status: document.status,
    error: document.error,
    chunkCount: document.chunkCount,
    progress:
      document.status === 'processing' && document.chunksTotal !== null
        ? { chunksIndexed: document.chunkCount, chunksTotal: document.chunksTotal }
        : null,
    createdAt: document.createdAt.toISOString(),
    updatedAt: document.updatedAt.toISOString(),
    indexedAt: document.indexedAt ? document.indexedAt.toISOString() : null,
  };
}

/** Area A shape (snake_case), as the tool catalog defines it; `content` only from get_document. */
export interface ToolDocumentView {
  id: string;
  title: string;
  project_id: string | null;
  author_id: string;
  is_public: boolean;
  status: DocumentStatus;
  mime_type: string;
  created_at: string;
  updated_at: string;
  content?: string | null;
}

export function toToolDocumentView(document: Document, content?: string | null): ToolDocumentView {
  const view: ToolDocumentView = {
    id: document.id,
    title: document.title,
    project_id: document.projectId,
    author_id: document.authorId,
    is_public: document.isPublic,
    status: document.status,
    mime_type: document.mimeType,
    created_at: document.createdAt.toISOString(),
    updated_at: document.updatedAt.toISOString(),
  };
  if (content !== undefined) view.content = content;
  return view;
}
