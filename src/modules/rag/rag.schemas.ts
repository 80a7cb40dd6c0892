import { named, nullable, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';

const kind = { type: 'string', enum: ['ingest', 'reindex'] };
const status = { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'cancelled'] };

export const IndexingJobSchema = named(
  'IndexingJob',
  object({
    jobId: uuid,
    projectId: nullable(uuid),
    kind,
    status,
    progress: object({
      total: { type: 'integer' },
      done: { type: 'integer' },
      failed: { type: 'integer' },
      current: nullable(
        object({ documentId: uuid, chunksDone: { type: 'integer' }, chunksTotal: { type: 'integer' } }),
      ),
    }),
    errors: { type: 'array', items: object({ documentId: uuid, message: { type: 'string' } }) },
    createdAt: timestamp,
    startedAt: nullable(timestamp),
    finishedAt: nullable(timestamp),
  }),
);

export const IndexingJobStartedSchema = named(
  'IndexingJobStarted',
  object({ jobId: uuid, status, kind, documentCount: { type: 'integer', minimum: 0 } }),
);

export const SearchResultSchema = named(
  'SearchResult',
  object({
    results: {
      type: 'array',
      items: object({
        documentId: uuid,
        documentTitle: { type: 'string' },
        authorId: uuid,
        chunkId: uuid,
        chunkIndex: { type: 'integer', minimum: 0 },
        text: { type: 'string' },
        score: { type: 'number' },
        vectorScore: { type: ['number', 'null'] },
        keywordScore: { type: ['number', 'null'] },
        startOffset: { type: 'integer' },
        endOffset: { type: 'integer' },
      }),
    },
    tookMs: { type: 'number' },
  }),
);
