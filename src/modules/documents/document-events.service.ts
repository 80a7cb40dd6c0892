import { Injectable, Logger } from '@nestjs/common';

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

  subscribe(listener: DocumentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async emit(event: DocumentEvent): Promise<void> {
    for (const listener of [...this.listeners]) {
      try {
        await listener(event);
      } catch (error) {
        this.logger.error({ msg: 'document event listener failed', event: event.type, documentId: event.documentId, error: String(error) });
      }
    }
  }
}
