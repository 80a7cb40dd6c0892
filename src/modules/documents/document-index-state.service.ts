import { Injectable } from '@nestjs/common';
import type { DbExecutor } from '../../database/kysely.provider.js';
import type { Document } from './document.model.js';
import { DocumentsRepository } from './documents.repository.js';

export interface DocumentForIndexing {
  id: string;
  projectId: string | null;
  authorId: string;
  title: string;
  sha256: string;
  status: Document['status'];
  mimeType: string;
  origin: Document['origin'];
  /** Extracted text; null until the indexer extracted it (and when extraction failed). */
  text: string | null;
}

/**
 * The indexer's side of a document (system calls, no actor: the RAG worker decides what to index from a
 * job a permitted caller created). State moves uploaded → processing → indexed | failed; every mark takes
 * the sha256 the job read, so a job for content that changed meanwhile changes nothing.
 */
@Injectable()
export class DocumentIndexStateService {
  constructor(private readonly documents: DocumentsRepository) {}

  async load(documentId: string): Promise<DocumentForIndexing | null> {
    const row = await this.documents.loadForIndexing(documentId);
    if (!row) return null;
    return {
      id: row.id,
      projectId: row.projectId,
      authorId: row.authorId,
      title: row.title,
      sha256: row.sha256,
      status: row.status,
      mimeType: row.mimeType,
      origin: row.origin,
      text: row.textContent,
    };
  }

  /** The stored bytes, for extraction. */
  loadBytes(documentId: string): Promise<Buffer | null> {
    return this.documents.contentBytes(documentId);
  }

  /** Keeps the extracted text of exactly this content; false when the content changed meanwhile. */
  storeText(documentId: string, sha256: string, text: string): Promise<boolean> {
    return this.documents.storeText(documentId, sha256, text);
  }

  /** Chunks written so far of `chunksTotal` (the document stays `processing`). */
  markProgress(documentId: string, sha256: string, chunksWritten: number, chunksTotal: number): Promise<void> {
    return this.documents.markProgress(documentId, sha256, chunksWritten, chunksTotal);
  }

  /** Like markIndexed, only for the content read: a job holding older content must not send a newer, indexed one back. */
  markProcessing(documentId: string, sha256: string): Promise<void> {
    return this.documents.markProcessing(documentId, sha256);
  }

  /** Returns false when the content changed since `sha256` was read (the result is stale and not recorded). */
  markIndexed(documentId: string, sha256: string, chunkCount: number): Promise<boolean> {
    return this.documents.markIndexed(documentId, sha256, chunkCount);
  }

  markFailed(documentId: string, sha256: string, reason: string): Promise<boolean> {
    return this.documents.markFailed(documentId, sha256, reason);
  }

  /** The documents of a job that was given up, still unfinished, fail with it (in the job's transaction). */
  failUnfinished(documentIds: string[], reason: string, executor: DbExecutor): Promise<void> {
    return this.documents.failUnfinished(documentIds, reason, executor);
  }

  /**
   * Locks the document for the caller's transaction (a concurrent update or delete waits until it ends) and
   * tells whether it still holds the content `sha256`: false when it changed or is gone.
   */
  async lockIfContent(documentId: string, sha256: string, executor: DbExecutor): Promise<boolean> {
    return (await this.documents.lockContent(documentId, executor)) === sha256;
  }

  /**
   * lockIfContent for several documents at once, without waiting: the ids of those locked that still hold the
   * content they were read with (one another transaction holds is left out, as one changed or gone).
   */
  async lockIfContents(
    documents: readonly { id: string; sha256: string }[],
    executor: DbExecutor,
  ): Promise<Set<string>> {
    const locked = await this.documents.lockContents(
      documents.map((document) => document.id),
      executor,
    );
    return new Set(documents.filter((document) => locked.get(document.id) === document.sha256).map((d) => d.id));
  }
}
