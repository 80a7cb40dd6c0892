import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export const DOCUMENT_STATUSES = ['uploaded', 'processing', 'indexed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** `upload`: bytes a user uploaded (deduplicated per author and project); `text`: content written through a tool. */
export type DocumentOrigin = 'upload' | 'text';

@Entity({ name: 'documents' })
export class Document {
  @PrimaryColumn('uuid')
  id: string;

  /** Null for a document created through a tool without a project. */
  @Column('uuid', { nullable: true })
  projectId: string | null;

  @Column('uuid')
  authorId: string;

  @Column('varchar')
  title: string;

  @Column('varchar')
  mimeType: string;

  @Column('integer')
  sizeBytes: number;

  @Column('char')
  sha256: string;

  @Column('boolean')
  isPublic: boolean;

  @Column('varchar')
  origin: DocumentOrigin;

  @Column('varchar')
  status: DocumentStatus;

  /** Why extraction or indexing failed, when status is `failed`. */
  @Column('text', { nullable: true })
  error: string | null;

  /** The original bytes; loaded only when asked for. */
  @Column('bytea', { select: false })
  content: Buffer;

  /** Extracted plain text; null when extraction failed. Loaded only when asked for. */
  @Column('text', { nullable: true, select: false })
  textContent: string | null;

  /** Maintained by the RAG indexer; while `processing`, the chunks written so far. */
  @Column('integer')
  chunkCount: number;

  /** Chunks the running indexing will write (null until the text is chunked). */
  @Column('integer', { nullable: true })
  chunksTotal: number | null;

  @Column({ type: 'timestamptz', nullable: true })
  indexedAt: Date | null;

  // Milliseconds, the precision of the list cursor (see migration ListTimestampsMilliseconds).
  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
