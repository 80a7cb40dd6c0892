import { Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { mayCreateWithoutProject } from '../../common/access/access-rules.js';
import type { Actor } from '../../common/auth/actor.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { decodeCursor, toPage, type Page } from '../../common/pagination/cursor-page.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import { isUniqueViolation } from '../../database/pg-errors.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { AuditService } from '../audit/audit.service.js';
import { ProjectsService } from '../projects/projects.service.js';
import { DocumentEventsService, type DocumentEventType } from './document-events.service.js';
import { detectDocumentType, mimeOfKind } from './document-type.js';
import { toDocumentView, type DocumentView } from './document-views.js';
import type { Document, DocumentStatus } from './document.model.js';
import {
  DocumentsRepository,
  type DocumentChanges,
  type DocumentWithText,
  type NewDocument,
} from './documents.repository.js';
import { isUuid } from '../../common/validation/uuid.js';

/** Text written through a tool or an update: at most 1 MB of UTF-8. */
export const MAX_TEXT_CONTENT_BYTES = 1024 * 1024;

export interface UploadInput {
  projectId: string;
  title?: string;
  isPublic?: boolean;
  file: { originalName: string; mimeType?: string; bytes: Buffer };
}

export interface CreateTextInput {
  title: string;
  content: string;
  projectId?: string | null;
  isPublic?: boolean;
}

export interface UpdateInput {
  title?: string;
  content?: string;
  isPublic?: boolean;
}

export interface ListVisibleInput {
  projectId?: string | null;
  /** Case-insensitive substring of the title; empty = no filter. */
  query?: string;
  limit: number;
}

/**
 * Documents and the one visibility rule: a document is visible to its author, and, when public, to the
 * members of its project (or to everyone, for a public document without a project). A private document
 * is invisible even to other members of its project. Only the author changes or deletes a document, and
 * inside a project only while at least an editor there. Every query here filters by the actor.
 */
@Injectable()
export class DocumentsService {
  constructor(
    private readonly documents: DocumentsRepository,
    private readonly projects: ProjectsService,
    private readonly events: DocumentEventsService,
    private readonly audit: AuditService,
    @InjectDb() private readonly db: Db,
  ) {}

  /** Who may upload into a project: its editors and owners (a viewer token or a stranger may not). */
  async authorizeUpload(actor: Actor, projectId: string): Promise<void> {
    await this.projects.requireRole(actor, projectId, 'editor');
  }

  async upload(actor: Actor, input: UploadInput): Promise<DocumentView> {
    await this.authorizeUpload(actor, input.projectId);
    const bytes = input.file.bytes;
    if (bytes.length === 0)
      throw AppException.validation('The uploaded file is empty', [{ field: 'file', message: 'empty file' }]);
    const type = detectDocumentType(input.file.originalName, input.file.mimeType, bytes);
    if (!type.ok) throw new AppException(ErrorCode.UnsupportedMediaType, `Unsupported file: ${type.reason}`);

    const sha256 = sha256Hex(bytes);
    await this.assertNotDuplicate(actor.userId, input.projectId, sha256);
    await this.events.admit(actor.userId, 'backend');

    // Beyond the type check above, nothing of the file is interpreted here: text extraction runs in the
    // indexing worker's sandbox (IngestSandbox), outside the request and the HTTP event loop, under
    // limits. The document is `uploaded` until then.
    let saved: Document;
    try {
      saved = await this.insertRecorded(actor, {
        id: randomUUID(),
        projectId: input.projectId,
        authorId: actor.userId,
        // A file name may carry NUL bytes, which PostgreSQL text cannot hold.
        title: (input.title?.trim() || input.file.originalName.replace(/\u0000/g, '') || 'Untitled').slice(0, 300),
        mimeType: type.mimeType,
        sizeBytes: bytes.length,
        sha256,
        isPublic: input.isPublic ?? false,
        origin: 'upload',
        content: bytes,
        textContent: null,
      });
    } catch (cause) {
      // Two identical uploads at once: the unique index decides, the loser gets the same 409.
      if (isUniqueViolation(cause)) await this.assertNotDuplicate(actor.userId, input.projectId, sha256);
      throw cause;
    }
    await this.emit('created', saved);
    return toDocumentView(saved);
  }

  /** Area B list: one project's documents the actor may see, newest first. */
  async list(
    actor: Actor,
    query: { projectId: string; status?: DocumentStatus; limit: number; cursor?: string },
  ): Promise<Page<DocumentView>> {
    await this.projects.requireRole(actor, query.projectId, 'viewer');
    const after = decodeCursor(query.cursor);
    const rows = await this.documents.pageVisibleInProject(actor, {
      projectId: query.projectId,
      status: query.status || undefined,
      limit: query.limit,
      after,
    });
    return toPage(rows, query.limit, toDocumentView);
  }

  /** Tool list: every document the actor may see, optionally of one project and by title. */
  async listVisible(actor: Actor, input: ListVisibleInput): Promise<{ items: Document[]; truncated: boolean }> {
    if (input.projectId && (await this.projects.roleOf(actor, input.projectId)) === null)
      throw AppException.notFound('Project');
    const rows = await this.documents.listVisible(actor, {
      projectId: input.projectId,
      titleLike: input.query ? `%${escapeLike(input.query)}%` : undefined,
      limit: input.limit + 1,
    });
    return { items: rows.slice(0, input.limit), truncated: rows.length > input.limit };
  }

  /**
   * Ids of one project's documents the actor may see, oldest first: those among `ids`, or those not indexed at
   * their current content (`needingIndex`), or all. What an ingest or reindex may touch.
   */
  async visibleIdsInProject(
    actor: Actor,
    projectId: string,
    filter: { ids?: string[]; needingIndex?: boolean },
  ): Promise<string[]> {
    return this.documents.visibleIdsInProject(actor, projectId, filter);
  }

  async get(actor: Actor, documentId: string): Promise<DocumentView> {
    return toDocumentView(await this.findVisible(actor, documentId));
  }

  /** The document with its extracted text (null when extraction failed). */
  async getWithContent(actor: Actor, documentId: string): Promise<{ document: Document; content: string | null }> {
    const document = await this.findVisibleWithText(actor, documentId);
    return { document, content: document.textContent };
  }

  /** The original bytes, for a download or a re-extraction. */
  async getOriginal(actor: Actor, documentId: string): Promise<{ document: Document; bytes: Buffer }> {
    const document = await this.findVisible(actor, documentId);
    const bytes = await this.documents.contentBytes(documentId);
    if (!bytes) throw AppException.notFound('Document');
    return { document, bytes };
  }

  /** A document written as text (markdown), e.g. by the create_document tool. Indexed in the background. */
  async createFromText(actor: Actor, input: CreateTextInput): Promise<Document> {
    const projectId = input.projectId || null;
    if (projectId) await this.projects.requireRole(actor, projectId, 'editor');
    else if (!mayCreateWithoutProject(actor)) {
      throw new AppException(
        ErrorCode.InvalidArgument,
        'This credential is limited to certain projects; name one of them as project_id',
        {
          argument: 'project_id',
        },
      );
    }
    await this.events.admit(actor.userId, 'tool-api');
    const bytes = textBytes(input.content);
    const saved = await this.insertRecorded(actor, {
      id: randomUUID(),
      projectId,
      authorId: actor.userId,
      title: validTitle(input.title),
      mimeType: mimeOfKind('markdown'),
      sizeBytes: bytes.length,
      sha256: sha256Hex(bytes),
      isPublic: input.isPublic ?? false,
      origin: 'text',
      content: bytes,
      textContent: input.content,
    });
    await this.emit('created', saved);
    return saved;
  }

  /** Title, content or visibility (author only). New content sends the document back to `processing`. */
  async update(actor: Actor, documentId: string, input: UpdateInput): Promise<Document> {
    const document = await this.findVisible(actor, documentId);
    await this.assertMayChange(actor, document);
    const changes: DocumentChanges = {};
    if (input.title !== undefined) changes.title = validTitle(input.title);
    if (input.isPublic !== undefined) changes.isPublic = input.isPublic;
    let contentChanged = false;
    if (input.content !== undefined) {
      const bytes = textBytes(input.content);
      const sha256 = sha256Hex(bytes);
      if (sha256 !== document.sha256 || document.origin !== 'text') {
        await this.events.admit(actor.userId, 'tool-api');
        contentChanged = true;
        Object.assign(changes, {
          content: bytes,
          textContent: input.content,
          sha256,
          sizeBytes: bytes.length,
          mimeType: mimeOfKind('markdown'),
          origin: 'text',
          status: 'processing',
          error: null,
          chunksTotal: null,
        } satisfies DocumentChanges);
      }
    }
    // A delete that won a race with this update leaves nothing to change or return: not_found, as a
    // request arriving a moment later would get.
    const saved =
      Object.keys(changes).length > 0
        ? await this.db.transaction().execute(async (trx) => {
            const updated = await this.documents.update(documentId, changes, trx);
            // Documents are edited only through the update_document tool: its call's entry commits with the edit.
            if (updated) await this.audit.recordToolChange(trx, { type: 'document', id: documentId });
            return updated;
          })
        : await this.documents.findVisible(actor, documentId);
    if (!saved) throw AppException.notFound('Document');
    if (contentChanged) await this.emit('content-changed', saved);
    else if (changes.title !== undefined && changes.title !== document.title) await this.emit('retitled', saved);
    return saved;
  }

  /** Author only. One transaction; the chunks go with the row (see remove below). */
  async delete(actor: Actor, documentId: string): Promise<{ id: string; deleted: true }> {
    const document = await this.findVisible(actor, documentId);
    await this.assertMayChange(actor, document);
    // The RAG module's document_chunks.document_id references documents(id) ON DELETE CASCADE, so the
    // document's chunks leave the search index in this same statement. Of two concurrent deletes only
    // the one that removed the row answers 200; the other gets not_found, as it would a moment later.
    const deleted = await this.db.transaction().execute(async (trx) => {
      if (!(await this.documents.delete(documentId, trx))) return false;
      await this.audit.recordChange(trx, {
        action: 'document.delete',
        target: { type: 'document', id: documentId },
        details: { projectId: document.projectId },
        onBehalfOf: actor.userId,
      });
      return true;
    });
    if (!deleted) throw AppException.notFound('Document');
    await this.emit('deleted', document);
    return { id: documentId, deleted: true };
  }

  /** Inserts a new document with its audit entry (document.upload, or the tool call that created it) in one transaction. */
  private insertRecorded(actor: Actor, document: NewDocument): Promise<Document> {
    return this.db.transaction().execute(async (trx) => {
      const saved = await this.documents.insert(document, trx);
      await this.audit.recordChange(trx, {
        action: 'document.upload',
        target: { type: 'document', id: saved.id },
        details: {
          projectId: saved.projectId,
          title: saved.title,
          mimeType: saved.mimeType,
          sizeBytes: saved.sizeBytes,
        },
        onBehalfOf: actor.userId,
      });
      return saved;
    });
  }

  /** The visible document or not_found; never reveals whether an invisible one exists. */
  async findVisible(actor: Actor, documentId: string): Promise<Document> {
    const document = isUuid(documentId) ? await this.documents.findVisible(actor, documentId) : null;
    if (!document) throw AppException.notFound('Document');
    return document;
  }

  private async findVisibleWithText(actor: Actor, documentId: string): Promise<DocumentWithText> {
    const document = isUuid(documentId) ? await this.documents.findVisible(actor, documentId, true) : null;
    if (!document) throw AppException.notFound('Document');
    return document;
  }

  /** Forbidden unless editableDocument holds for a document the actor sees; the message says which half of the rule failed. */
  private async assertMayChange(actor: Actor, document: Document): Promise<void> {
    if (await this.documents.isEditable(actor, document.id)) return;
    // Deleted since it was read (a concurrent delete won): not found, as it would be a moment later.
    if (!(await this.documents.exists(document.id))) throw AppException.notFound('Document');
    throw AppException.forbidden(
      document.authorId !== actor.userId
        ? 'Only the author may change or delete this document'
        : 'Changing a document needs the editor role in its project',
    );
  }

  private async assertNotDuplicate(authorId: string, projectId: string, sha256: string): Promise<void> {
    const existing = await this.documents.findUpload(authorId, projectId, sha256);
    if (existing) {
      // The status tells a client retrying after an outage whether the earlier upload is still on its way.
      throw new AppException(ErrorCode.Conflict, 'You already uploaded this file to this project', {
        existingId: existing.id,
        existingStatus: existing.status,
      });
    }
  }

  private emit(type: DocumentEventType, document: Document): Promise<void> {
    return this.events.emit({
      type,
      documentId: document.id,
      projectId: document.projectId,
      authorId: document.authorId,
      sha256: document.sha256,
      traceId: RequestContext.requestId(),
    });
  }
}

function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function textBytes(content: string): Buffer {
  const bytes = Buffer.from(content, 'utf8');
  if (bytes.length > MAX_TEXT_CONTENT_BYTES) {
    throw new AppException(ErrorCode.InvalidArgument, `content is larger than ${MAX_TEXT_CONTENT_BYTES} bytes`, {
      argument: 'content',
    });
  }
  return bytes;
}

function validTitle(title: string): string {
  const trimmed = title.trim();
  if (trimmed === '' || trimmed.length > 300) {
    throw new AppException(ErrorCode.InvalidArgument, 'title must be 1..300 characters', { argument: 'title' });
  }
  return trimmed;
}

function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}
