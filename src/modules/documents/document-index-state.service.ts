import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { Document } from './document.entity.js';

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
  constructor(@InjectRepository(Document) private readonly documents: Repository<Document>) {}

  async load(documentId: string): Promise<DocumentForIndexing | null> {
    const row = await this.documents.createQueryBuilder('d').addSelect('d.textContent').where('d.id = :documentId', { documentId }).getOne();
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
  async loadBytes(documentId: string): Promise<Buffer | null> {
    const row = await this.documents.createQueryBuilder('d').select('d.id').addSelect('d.content').where('d.id = :documentId', { documentId }).getOne();
    return row ? row.content : null;
  }

  /** Keeps the extracted text of exactly this content; false when the content changed meanwhile. */
  async storeText(documentId: string, sha256: string, text: string): Promise<boolean> {
    const result = await this.documents.update({ id: documentId, sha256 }, { textContent: text });
    return (result.affected ?? 0) > 0;
  }

  /** Chunks written so far of `chunksTotal` (the document stays `processing`). */
  async markProgress(documentId: string, sha256: string, chunksWritten: number, chunksTotal: number): Promise<void> {
    await this.documents.update({ id: documentId, sha256, status: 'processing' }, { chunkCount: chunksWritten, chunksTotal });
  }

  /** Documents of a project with text that is not indexed at its current content. */
  /** Like markIndexed, only for the content read: a job holding older content must not send a newer, indexed one back. */
  async markProcessing(documentId: string, sha256: string): Promise<void> {
    await this.documents.update({ id: documentId, sha256 }, { status: 'processing', error: null, chunksTotal: null });
  }

  /** Returns false when the content changed since `sha256` was read (the result is stale and not recorded). */
  async markIndexed(documentId: string, sha256: string, chunkCount: number): Promise<boolean> {
    const result = await this.documents.update({ id: documentId, sha256 }, { status: 'indexed', error: null, chunkCount, chunksTotal: null, indexedAt: new Date() });
    return (result.affected ?? 0) > 0;
  }

  async markFailed(documentId: string, sha256: string, reason: string): Promise<boolean> {
    const result = await this.documents.update({ id: documentId, sha256 }, { status: 'failed', error: reason.slice(0, 2000), chunksTotal: null });
    return (result.affected ?? 0) > 0;
  }
}
