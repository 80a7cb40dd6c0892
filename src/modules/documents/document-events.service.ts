import { Injectable, Logger } from '@nestjs/common';
import type { ApiArea } from '../../common/http/api-area.js';

/** `retitled`: only the title changed (it is part of every chunk's indexed text, so the index is outdated too). */
export type DocumentEventType = 'created' | 'content-changed' | 'retitled' | 'deleted';

export interface DocumentEvent {
  type: DocumentEventType;
  documentId: string;
  projectId: string | null;
  authorId: string;
  /** sha256 of the content the event is about (the new content for created / content-changed). */
  sha256: string;
  /** The request id of the call that caused the event, when there was one, so queued work can join its logs. */
  traceId?: string;
}

export type DocumentEventListener = (event: DocumentEvent) => void | Promise<void>;

/** Refuses (throws) new indexing work for a user who has too much queued already; `area` picks the error's casing. */
export type IndexingAdmission = (userId: string, area: ApiArea) => Promise<void>;

/**
 * Tells other modules that a document's content appeared, changed or went away, after the change is
 * committed. The RAG module subscribes in its onModuleInit and enqueues indexing:
 *
 *   constructor(events: DocumentEventsService) {}
 *   onModuleInit() { this.unsubscribe = this.events.subscribe((e) => this.enqueueFor(e)); }
 *
 * Listeners are awaited in order, so an enqueue finishes before the HTTP answer; a listener that throws
 * is logged and does not undo the change or stop other listeners (the document stays `uploaded` and a
 * later `POST /api/rag/ingest` picks it up).
 */
@Injectable()
export class DocumentEventsService {
  private readonly logger = new Logger(DocumentEventsService.name);
  private readonly listeners = new Set<DocumentEventListener>();
  private admission?: IndexingAdmission;

  /** The indexing side's per-user cap (RAG: IndexingJobsService), asked before a change that will need indexing. */
  setAdmission(admission: IndexingAdmission | undefined): void {
    this.admission = admission;
  }

  /** Throws 429 when the user may not queue more indexing work now (INDEX_MAX_QUEUED_PER_USER). */
  async admit(userId: string, area: ApiArea): Promise<void> {
    await this.admission?.(userId, area);
  }

  subscribe(listener: DocumentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async emit(event: DocumentEvent): Promise<void> {
    for (const listener of [...this.listeners]) {
      try {
        await listener(event);
      } catch (error) {
        this.logger.error({
          msg: 'document event listener failed',
          event: event.type,
          documentId: event.documentId,
          error: String(error),
        });
      }
    }
  }
}
