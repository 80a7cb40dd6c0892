import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { filterOrUndefined, param, type ToolArgs } from '../tool-kit/tool-parameters.js';
import { Tool, ToolProvider } from '../tool-kit/tool.decorators.js';
import { RagSearchService } from './rag-search.service.js';

const HIT_SCHEMA = {
  type: 'object',
  properties: {
    document_id: { type: 'string', format: 'uuid' },
    title: { type: 'string' },
    author_id: { type: 'string', format: 'uuid', description: 'Who wrote the document' },
    chunk_index: { type: 'integer' },
    text: { type: 'string' },
    score: { type: 'number' },
  },
  required: ['document_id', 'title', 'author_id', 'chunk_index', 'text', 'score'],
  additionalProperties: false,
};

const SEARCH_DOCUMENTS = {
  query: param.str({ description: 'What to look for', required: true, minLength: 1, maxLength: 2000 }),
  project_id: param.str({
    description: 'Only documents of this project id; empty = every project you may see',
    default: '',
    format: 'uuid',
  }),
  limit: param.int({ description: 'Maximum number of passages', default: 5, minimum: 1, maximum: 50 }),
};

/** `search_documents`: a thin adapter over RagSearchService (same visibility rule as POST /api/rag/search). */
// Between get_document (201) and create_document (202), as API.md lists the catalog; docs:read is declared by the documents provider.
@ToolProvider({
  position: 201.5,
  toolset: 'docs',
  instructions: 'search_documents finds passages by keywords and meaning; cite its document_id.',
})
@Injectable()
export class RagToolProvider {
  constructor(private readonly search: RagSearchService) {}

  @Tool({
    name: 'search_documents',
    title: 'Search documents',
    description:
      'Hybrid keyword + vector search over the text of documents you wrote or that are public in your projects; best passages first.',
    scope: 'docs:read',
    annotations: { readOnlyHint: true, openWorldHint: false },
    output: { type: 'array', items: HIT_SCHEMA },
    provenance: { kind: 'written', object: 'document', id: 'document_id', writers: ['author_id'] },
    parameters: SEARCH_DOCUMENTS,
  })
  async searchDocuments(args: ToolArgs<typeof SEARCH_DOCUMENTS>, actor: Actor) {
    const { results } = await this.search.search(actor, {
      query: args.query,
      projectId: filterOrUndefined(args.project_id) ?? null,
      topK: args.limit,
      mode: 'hybrid',
    });
    return results.map((hit) => ({
      document_id: hit.documentId,
      title: hit.documentTitle,
      author_id: hit.authorId,
      chunk_index: hit.chunkIndex,
      text: hit.text,
      score: hit.score,
    }));
  }
}
