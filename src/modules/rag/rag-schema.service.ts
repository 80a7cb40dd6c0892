import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EMBEDDING_PROVIDER, type EmbeddingProvider } from './embeddings/embedding-provider.js';

/**
 * Makes sure the partial HNSW index for the configured dimension exists (the migration creates the one
 * for the default 768; see migrations/1763792000000-rag.ts for why the column has no fixed dimension).
 */
@Injectable()
export class RagSchemaService implements OnModuleInit {
  private readonly logger = new Logger(RagSchemaService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(EMBEDDING_PROVIDER) private readonly embedder: EmbeddingProvider,
  ) {}

  async onModuleInit(): Promise<void> {
    const dims = this.embedder.dimensions;
    if (!Number.isInteger(dims) || dims < 1 || dims > 2000) throw new Error(`EMBEDDINGS_DIMENSIONS=${dims} cannot be indexed by HNSW`);
    await this.dataSource.query(
      `CREATE INDEX IF NOT EXISTS document_chunks_embedding_hnsw_${dims} ON document_chunks
         USING hnsw ((embedding::vector(${dims})) vector_cosine_ops) WHERE embedding_dims = ${dims}`,
    );
    this.logger.log({ msg: 'vector index ready', embedding: this.embedder.key });
  }
}
