import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { APP_CONFIG } from '../../config/app-config.token.js';
import type { AppConfig } from '../../config/app-config.js';
import { chunkText } from './chunking/chunker.js';
import { EMBEDDING_PROVIDER, toVectorLiteral, type EmbeddingProvider } from './embeddings/embedding-provider.js';
import { TEXT_SEARCH_CONFIG, TSV_TF_SQL } from './rag.constants.js';

export interface IndexableDocument {
  id: string;
  title: string;
  sha256: string;
  text: string;
}

export type WriteOutcome = { status: 'indexed'; chunkCount: number } | { status: 'unchanged'; chunkCount: number } | { status: 'stale' };

/**
 * Turns one document into chunks, embeddings and BM25 postings, replacing its previous chunks in one
 * transaction. Idempotent: when the stored chunks already come from this content (sha256) in this vector
 * space (embedding key), nothing is recomputed unless `force` is set.
 */
@Injectable()
export class ChunkWriterService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async isCurrent(documentId: string, sha256: string): Promise<number | null> {
    const [row] = await this.dataSource.query(
      `SELECT count(*)::int AS n, bool_and(content_sha256 = $2 AND embedding_model = $3) AS current FROM document_chunks WHERE document_id = $1`,
      [documentId, sha256, this.embedder.key],
    );
    return row && row.n > 0 && row.current ? row.n : null;
  }

  /**
   * Takes a document's outdated chunks out of the search index (their postings and the BM25 statistics
   * follow by cascade and triggers): those of earlier content, or all of them when `currentSha256` is
   * null (the title, part of every chunk's indexed text, changed). Called the moment the document
   * changes, so search never serves what the document no longer says, not while it is re-indexed and
   * not if that fails.
   */
  async dropOutdated(documentId: string, currentSha256: string | null): Promise<void> {
    await this.dataSource.query(`DELETE FROM document_chunks WHERE document_id = $1 AND ($2::text IS NULL OR content_sha256 <> $2)`, [documentId, currentSha256]);
  }

  async write(document: IndexableDocument, force = false): Promise<WriteOutcome> {
    if (!force) {
      const existing = await this.isCurrent(document.id, document.sha256);
      if (existing !== null) return { status: 'unchanged', chunkCount: existing };
    }
    const chunks = chunkText(document.text, {
      targetChars: this.config.embeddings.chunkTargetChars,
      overlapChars: this.config.embeddings.chunkOverlapChars,
    });
    // The title travels with every chunk into the indexed text (not into the cited span): a passage
    // often only makes sense, and only matches, together with the title of its document.
    const indexTexts = chunks.map((chunk) => `${document.title}\n\n${chunk.text}`);
    if (chunks.length === 0 && document.title.trim()) indexTexts.push(document.title);
    const vectors = indexTexts.length ? await this.embedder.embed(indexTexts, 'document') : [];
    const rows = indexTexts.map((indexText, i) => ({
      id: randomUUID(),
      index: i,
      text: chunks[i]?.text ?? '',
      start: chunks[i]?.startOffset ?? 0,
      end: chunks[i]?.endOffset ?? 0,
      indexText,
      vector: vectors[i].some((value) => value !== 0) ? toVectorLiteral(vectors[i]) : null,
    }));

    return this.dataSource.transaction(async (manager) => {
      // Lock the document so a concurrent update or delete waits; content that changed since it was read is not indexed.
      const [current] = await manager.query(`SELECT sha256 FROM documents WHERE id = $1 FOR UPDATE`, [document.id]);
      if (!current || current.sha256 !== document.sha256) return { status: 'stale' } as const;
      await manager.query(`DELETE FROM document_chunks WHERE document_id = $1`, [document.id]);
      if (rows.length > 0) {
        await manager.query(
          `WITH input AS (
             SELECT * FROM unnest($2::uuid[], $3::int[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[])
               AS t(id, chunk_index, text, start_offset, end_offset, index_text, embedding)),
           prepared AS (SELECT input.*, to_tsvector('${TEXT_SEARCH_CONFIG}', index_text) AS tsv FROM input),
           inserted AS (
             INSERT INTO document_chunks (id, document_id, chunk_index, text, start_offset, end_offset, content_sha256,
                                          embedding_model, embedding_dims, embedding, tsv, token_count)
             SELECT id, $1, chunk_index, text, start_offset, end_offset, $9, $10, $11, embedding::vector, tsv,
                    (SELECT coalesce(sum(${TSV_TF_SQL}), 0) FROM unnest(tsv) u)
             FROM prepared
             RETURNING id, tsv, token_count)
           INSERT INTO rag_postings (lexeme, chunk_id, document_id, tf, dl)
           SELECT u.lexeme, inserted.id, $1, ${TSV_TF_SQL}, inserted.token_count
           FROM inserted, unnest(inserted.tsv) u
           ORDER BY u.lexeme`,
          [
            document.id,
            rows.map((row) => row.id),
            rows.map((row) => row.index),
            rows.map((row) => row.text),
            rows.map((row) => row.start),
            rows.map((row) => row.end),
            rows.map((row) => row.indexText),
            rows.map((row) => row.vector),
            document.sha256,
            this.embedder.key,
            this.embedder.dimensions,
          ],
        );
      }
      return { status: 'indexed', chunkCount: rows.length } as const;
    });
  }

  /** Documents whose chunks are in another vector space than the configured one (provider/model/dimension changed). */
  async projectsWithStaleVectors(): Promise<{ projectId: string | null; documentIds: string[] }[]> {
    const rows: { project_id: string | null; ids: string[] }[] = await this.dataSource.query(
      `SELECT d.project_id, array_agg(DISTINCT d.id) AS ids
       FROM document_chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.embedding_model <> $1
       GROUP BY d.project_id`,
      [this.embedder.key],
    );
    return rows.map((row) => ({ projectId: row.project_id, documentIds: row.ids }));
  }
}
