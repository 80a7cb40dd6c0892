import { Injectable } from '@nestjs/common';
import { sql, type Selectable, type UpdateObject } from 'kysely';
import { editableDocument, visibleDocument } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import type { DB, Documents } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import type { Document, DocumentOrigin, DocumentStatus } from './document.model.js';

/** Every column of a document but its bytes and its text (those are loaded only when asked for). */
const SUMMARY_COLUMNS = [
  'id',
  'projectId',
  'authorId',
  'title',
  'mimeType',
  'sizeBytes',
  'sha256',
  'isPublic',
  'origin',
  'status',
  'error',
  'chunkCount',
  'chunksTotal',
  'indexedAt',
  'createdAt',
  'updatedAt',
] as const;

type SummaryRow = Omit<Selectable<Documents>, 'content' | 'textContent'>;

/** Bytes of a document's file per answer row (sent hex-encoded, twice that): a few milliseconds of parsing each. */
const CONTENT_PIECE_BYTES = 512 * 1024;

function toDocument(row: SummaryRow): Document {
  return {
    id: row.id,
    projectId: row.projectId,
    authorId: row.authorId,
    title: row.title,
    mimeType: row.mimeType,
    sizeBytes: row.sizeBytes,
    sha256: row.sha256,
    isPublic: row.isPublic,
    origin: row.origin as DocumentOrigin,
    status: row.status as DocumentStatus,
    error: row.error,
    chunkCount: row.chunkCount,
    chunksTotal: row.chunksTotal,
    indexedAt: row.indexedAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** A document to insert: it starts `uploaded`, not indexed. */
export type NewDocument = Pick<
  Document,
  'id' | 'projectId' | 'authorId' | 'title' | 'mimeType' | 'sizeBytes' | 'sha256' | 'isPublic' | 'origin'
> & {
  content: Buffer;
  /** Known at once for a text document; an upload's text is extracted by the indexer. */
  textContent: string | null;
};

/** What an update may change (the author's edit); the repository stamps `updated_at`. */
export interface DocumentChanges {
  title?: string;
  isPublic?: boolean;
  content?: Buffer;
  textContent?: string;
  sha256?: string;
  sizeBytes?: number;
  mimeType?: string;
  origin?: DocumentOrigin;
  status?: DocumentStatus;
  error?: null;
  chunksTotal?: null;
}

/** The indexer's view of a document: its summary and its extracted text (null until extracted, or when extraction failed). */
export interface DocumentWithText extends Document {
  textContent: string | null;
}

/**
 * The `documents` table: the only place its SQL lives (the RAG module changes a document's index state
 * through here too). Reads on behalf of a caller compose the access rule (visibleDocument); the index-state
 * writes are fenced by the content hash the indexer read, so a job holding older content changes nothing.
 */
@Injectable()
export class DocumentsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** Documents `d` the actor may see. */
  private visibleTo(actor: Actor, executor: DbExecutor = this.db) {
    return executor.selectFrom('documents as d').where(visibleDocument(actor, 'd'));
  }

  async insert(document: NewDocument, executor: DbExecutor = this.db): Promise<Document> {
    const row = await executor
      .insertInto('documents')
      .values({
        id: document.id,
        projectId: document.projectId,
        authorId: document.authorId,
        title: document.title,
        mimeType: document.mimeType,
        sizeBytes: document.sizeBytes,
        sha256: document.sha256,
        isPublic: document.isPublic,
        origin: document.origin,
        status: 'uploaded',
        error: null,
        content: document.content,
        textContent: document.textContent,
        chunkCount: 0,
        indexedAt: null,
      })
      .returning(SUMMARY_COLUMNS)
      .executeTakeFirstOrThrow();
    return toDocument(row);
  }

  /** An earlier upload of the same bytes by the same author into the same project. */
  /** Whether the actor may change or delete the document (editableDocument: its author, at least an editor in its project). */
  async isEditable(actor: Actor, documentId: string, executor: DbExecutor = this.db): Promise<boolean> {
    const row = await executor
      .selectFrom('documents as d')
      .select('d.id')
      .where('d.id', '=', documentId)
      .where(editableDocument(actor, 'd'))
      .executeTakeFirst();
    return row !== undefined;
  }

  async exists(documentId: string, executor: DbExecutor = this.db): Promise<boolean> {
    return (
      (await executor.selectFrom('documents').select('id').where('id', '=', documentId).executeTakeFirst()) !==
      undefined
    );
  }

  async findUpload(
    authorId: string,
    projectId: string,
    sha256: string,
  ): Promise<{ id: string; status: DocumentStatus } | null> {
    const row = await this.db
      .selectFrom('documents')
      .select(['id', 'status'])
      .where('authorId', '=', authorId)
      .where('projectId', '=', projectId)
      .where('sha256', '=', sha256)
      .where('origin', '=', 'upload')
      .limit(1)
      .executeTakeFirst();
    return row ? { id: row.id, status: row.status as DocumentStatus } : null;
  }

  /** The document if the actor may see it, with its text when asked. */
  async findVisible(actor: Actor, documentId: string, withText: true): Promise<DocumentWithText | null>;
  async findVisible(actor: Actor, documentId: string, withText?: false): Promise<Document | null>;
  async findVisible(actor: Actor, documentId: string, withText = false): Promise<Document | DocumentWithText | null> {
    const row = await this.visibleTo(actor)
      .select(SUMMARY_COLUMNS)
      .$if(withText, (qb) => qb.select('d.textContent'))
      .where('d.id', '=', documentId)
      .executeTakeFirst();
    if (!row) return null;
    return withText
      ? { ...toDocument(row), textContent: (row as { textContent: string | null }).textContent }
      : toDocument(row);
  }

  /**
   * One page of a project's documents the actor may see, newest first (ties by id), after `cursor`:
   * `limit + 1` rows, the extra one only telling whether another page follows.
   */
  async pageVisibleInProject(
    actor: Actor,
    query: { projectId: string; status?: DocumentStatus; limit: number; after?: { createdAt: string; id: string } },
  ): Promise<Document[]> {
    const rows = await this.visibleTo(actor)
      .select(SUMMARY_COLUMNS)
      .where('d.projectId', '=', query.projectId)
      .$if(query.status !== undefined, (qb) => qb.where('d.status', '=', query.status!))
      .$if(query.after !== undefined, (qb) =>
        qb.where(
          sql<boolean>`(d.created_at, d.id) < (${query.after!.createdAt}::timestamptz, ${query.after!.id}::uuid)`,
        ),
      )
      .orderBy('d.createdAt', 'desc')
      .orderBy('d.id', 'desc')
      .limit(query.limit + 1)
      .execute();
    return rows.map(toDocument);
  }

  /** Documents the actor may see, newest first, optionally of one project and by title (a LIKE pattern, `\` escapes). */
  async listVisible(
    actor: Actor,
    query: { projectId?: string | null; titleLike?: string; limit: number },
  ): Promise<Document[]> {
    const rows = await this.visibleTo(actor)
      .select(SUMMARY_COLUMNS)
      .$if(!!query.projectId, (qb) => qb.where('d.projectId', '=', query.projectId!))
      .$if(!!query.titleLike, (qb) => qb.where(sql<boolean>`d.title ILIKE ${query.titleLike} ESCAPE '\\'`))
      .orderBy('d.createdAt', 'desc')
      .orderBy('d.id', 'desc')
      .limit(query.limit)
      .execute();
    return rows.map(toDocument);
  }

  /** Ids of one project's documents the actor may see, oldest first: among `ids`, or not indexed at their current content, or all. */
  async visibleIdsInProject(
    actor: Actor,
    projectId: string,
    filter: { ids?: string[]; needingIndex?: boolean },
  ): Promise<string[]> {
    const rows = await this.visibleTo(actor)
      .select('d.id')
      .where('d.projectId', '=', projectId)
      .$if(filter.ids !== undefined, (qb) => qb.where(sql<boolean>`d.id = ANY(${filter.ids}::uuid[])`))
      .$if(!!filter.needingIndex, (qb) => qb.where('d.status', 'not in', ['indexed', 'failed']))
      .orderBy('d.createdAt', 'asc')
      .orderBy('d.id', 'asc')
      .execute();
    return rows.map((row) => row.id);
  }

  /**
   * The stored bytes (for a download or the indexer's extraction); null when the document is gone. Read as rows of
   * CONTENT_PIECE_BYTES in one statement (one snapshot, the value decompressed once): the driver parses each answer
   * row on the event loop, so a large file's arrive in pieces with requests served in between.
   */
  async contentBytes(documentId: string): Promise<Buffer | null> {
    const { rows } = await sql<{ piece: Buffer; size: number }>`
      SELECT substring(d.bytes FROM p.start FOR ${CONTENT_PIECE_BYTES}::int) AS piece, octet_length(d.bytes) AS size
      FROM (SELECT content || ''::bytea AS bytes FROM documents WHERE id = ${documentId} OFFSET 0) d
      CROSS JOIN LATERAL generate_series(1, greatest(octet_length(d.bytes), 1), ${CONTENT_PIECE_BYTES}::int) AS p(start)
      ORDER BY p.start`.execute(this.db);
    if (rows.length === 0) return null;
    return rows.length === 1
      ? rows[0].piece
      : Buffer.concat(
          rows.map((row) => row.piece),
          rows[0].size,
        );
  }

  /** Applies an edit and stamps `updated_at`; null when the document is gone (a delete won the race). */
  async update(documentId: string, changes: DocumentChanges, executor: DbExecutor = this.db): Promise<Document | null> {
    const set: UpdateObject<DB, 'documents'> = { updatedAt: sql<Date>`now()` };
    if (changes.title !== undefined) set.title = changes.title;
    if (changes.isPublic !== undefined) set.isPublic = changes.isPublic;
    if (changes.content !== undefined) set.content = changes.content;
    if (changes.textContent !== undefined) set.textContent = changes.textContent;
    if (changes.sha256 !== undefined) set.sha256 = changes.sha256;
    if (changes.sizeBytes !== undefined) set.sizeBytes = changes.sizeBytes;
    if (changes.mimeType !== undefined) set.mimeType = changes.mimeType;
    if (changes.origin !== undefined) set.origin = changes.origin;
    if (changes.status !== undefined) set.status = changes.status;
    if (changes.error !== undefined) set.error = changes.error;
    if (changes.chunksTotal !== undefined) set.chunksTotal = changes.chunksTotal;
    const row = await executor
      .updateTable('documents')
      .set(set)
      .where('id', '=', documentId)
      .returning(SUMMARY_COLUMNS)
      .executeTakeFirst();
    return row ? toDocument(row) : null;
  }

  /** Deletes the row (its chunks follow by cascade); false when it was already gone. */
  async delete(documentId: string, executor: DbExecutor = this.db): Promise<boolean> {
    const result = await executor.deleteFrom('documents').where('id', '=', documentId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  // ---- the indexer's side (system calls, no actor; fenced by the content hash it read) ----

  async loadForIndexing(documentId: string): Promise<DocumentWithText | null> {
    const row = await this.db
      .selectFrom('documents')
      .select(SUMMARY_COLUMNS)
      .select('textContent')
      .where('id', '=', documentId)
      .executeTakeFirst();
    return row ? { ...toDocument(row), textContent: row.textContent } : null;
  }

  /** Keeps the extracted text of exactly this content; false when the content changed meanwhile. */
  async storeText(documentId: string, sha256: string, text: string): Promise<boolean> {
    const result = await this.db
      .updateTable('documents')
      .set({ textContent: text })
      .where('id', '=', documentId)
      .where('sha256', '=', sha256)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Chunks written so far of `chunksTotal`, while the document is `processing` at this content. */
  async markProgress(documentId: string, sha256: string, chunksWritten: number, chunksTotal: number): Promise<void> {
    await this.db
      .updateTable('documents')
      .set({ chunkCount: chunksWritten, chunksTotal })
      .where('id', '=', documentId)
      .where('sha256', '=', sha256)
      .where('status', '=', 'processing')
      .execute();
  }

  async markProcessing(documentId: string, sha256: string): Promise<void> {
    await this.db
      .updateTable('documents')
      .set({ status: 'processing', error: null, chunksTotal: null })
      .where('id', '=', documentId)
      .where('sha256', '=', sha256)
      .execute();
  }

  /** False when the content changed since `sha256` was read. */
  async markIndexed(documentId: string, sha256: string, chunkCount: number): Promise<boolean> {
    const result = await this.db
      .updateTable('documents')
      .set({
        status: 'indexed',
        error: null,
        chunkCount,
        chunksTotal: null,
        indexedAt: sql<Date>`now()`,
      })
      .where('id', '=', documentId)
      .where('sha256', '=', sha256)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** False when the content changed since `sha256` was read. */
  async markFailed(documentId: string, sha256: string, reason: string): Promise<boolean> {
    const result = await this.db
      .updateTable('documents')
      .set({ status: 'failed', error: reason.slice(0, 2000), chunksTotal: null })
      .where('id', '=', documentId)
      .where('sha256', '=', sha256)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Fails the documents among `ids` still unfinished (their job was given up), in the caller's transaction. */
  async failUnfinished(documentIds: string[], reason: string, executor: DbExecutor = this.db): Promise<void> {
    await executor
      .updateTable('documents')
      .set({ status: 'failed', error: reason.slice(0, 2000), chunksTotal: null, updatedAt: sql<Date>`now()` })
      .where(sql<boolean>`id = ANY(${documentIds}::uuid[])`)
      .where('status', 'in', ['uploaded', 'processing'])
      .execute();
  }

  /**
   * Locks the document row until the caller's transaction ends (a concurrent update or delete waits) and
   * returns its content hash; null when it is gone.
   */
  async lockContent(documentId: string, executor: DbExecutor): Promise<string | null> {
    const row = await executor
      .selectFrom('documents')
      .select('sha256')
      .where('id', '=', documentId)
      .forUpdate()
      .executeTakeFirst();
    return row ? row.sha256 : null;
  }

  /**
   * Locks the rows of several documents until the caller's transaction ends and returns the content hash of each
   * one locked, by id. A row another transaction holds is skipped, never waited for: one that locks several
   * documents in another order (a project's deletion) could otherwise wait for this caller in turn.
   */
  async lockContents(documentIds: readonly string[], executor: DbExecutor): Promise<Map<string, string>> {
    const rows = await executor
      .selectFrom('documents')
      .select(['id', 'sha256'])
      .where(sql<boolean>`id = ANY(${[...documentIds]}::uuid[])`)
      .forUpdate()
      .skipLocked()
      .execute();
    return new Map(rows.map((row) => [row.id, row.sha256]));
  }
}
