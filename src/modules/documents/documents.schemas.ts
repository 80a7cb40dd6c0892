import { named, nullable, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { DOCUMENT_STATUSES } from './document.model.js';

export const DocumentSchema = named(
  'Document',
  object({
    id: uuid,
    projectId: nullable(uuid),
    title: { type: 'string' },
    mimeType: { type: 'string' },
    sizeBytes: { type: 'integer', minimum: 0 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    isPublic: { type: 'boolean' },
    authorId: uuid,
    status: { type: 'string', enum: [...DOCUMENT_STATUSES], description: 'uploaded → processing → indexed | failed' },
    error: { type: ['string', 'null'], description: 'Why indexing failed (status failed)' },
    chunkCount: { type: 'integer', minimum: 0 },
    progress: nullable(object({ chunksIndexed: { type: 'integer' }, chunksTotal: { type: 'integer' } })),
    createdAt: timestamp,
    updatedAt: timestamp,
    indexedAt: nullable(timestamp),
  }),
);

export const DeletedSchema = named('Deleted', object({ id: uuid, deleted: { const: true } }));
