import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { ToolList } from '../tool-kit/tool-definition.js';
import { filterOrUndefined, param, type ToolArgs } from '../tool-kit/tool-parameters.js';
import { Tool, ToolProvider } from '../tool-kit/tool.decorators.js';
import { toToolDocumentView } from './document-views.js';
import { DOCUMENT_STATUSES } from './document.model.js';
import { DocumentsService, MAX_TEXT_CONTENT_BYTES } from './documents.service.js';

const nullableUuid = { type: ['string', 'null'], format: 'uuid' };
const DOCUMENT_SUMMARY_PROPERTIES = {
  id: { type: 'string', format: 'uuid' },
  title: { type: 'string' },
  project_id: nullableUuid,
  author_id: { type: 'string', format: 'uuid' },
  is_public: { type: 'boolean' },
  status: { type: 'string', enum: [...DOCUMENT_STATUSES] },
  mime_type: { type: 'string' },
  created_at: { type: 'string', format: 'date-time' },
  updated_at: { type: 'string', format: 'date-time' },
};
const DOCUMENT_SUMMARY_SCHEMA = {
  type: 'object',
  properties: DOCUMENT_SUMMARY_PROPERTIES,
  required: Object.keys(DOCUMENT_SUMMARY_PROPERTIES),
  additionalProperties: false,
};
const DOCUMENT_SCHEMA = {
  type: 'object',
  properties: {
    ...DOCUMENT_SUMMARY_PROPERTIES,
    content: {
      type: ['string', 'null'],
      description:
        'Extracted text; null while the upload is still being extracted (status uploaded or processing) or when extraction failed',
    },
  },
  required: Object.keys(DOCUMENT_SUMMARY_PROPERTIES),
  additionalProperties: false,
};
const DELETED_SCHEMA = {
  type: 'object',
  properties: { id: { type: 'string', format: 'uuid' }, deleted: { type: 'boolean', const: true } },
  required: ['id', 'deleted'],
};

const documentId = param.str({ description: 'The document id (UUID)', required: true, format: 'uuid' });
const READ = { readOnlyHint: true, openWorldHint: false } as const;
/** Only its author may write a document's title and text. */
const DOCUMENT_TEXT = { kind: 'written', object: 'document', id: 'id', writers: ['author_id'] } as const;

const LIST_DOCUMENTS = {
  project_id: param.str({ description: 'Only documents of this project id', default: '', format: 'uuid' }),
  query: param.str({
    description: 'Only documents whose title contains this text (case-insensitive); empty = no filter',
    default: '',
    maxLength: 300,
  }),
  limit: param.int({ description: 'Maximum number of documents', default: 50, minimum: 1, maximum: 200 }),
};
const GET_DOCUMENT = {
  document_id: documentId,
  include_content: param.bool({ description: 'Include the extracted text', default: true }),
};
const CREATE_DOCUMENT = {
  title: param.str({ description: 'Title (1..300 chars)', required: true, minLength: 1, maxLength: 300 }),
  content: param.str({
    description: 'Text or markdown (at most 1 MB)',
    required: true,
    maxLength: MAX_TEXT_CONTENT_BYTES,
    audit: 'omit',
  }),
  project_id: param.str({
    description: 'Id of a project you may edit; empty = no project',
    default: '',
    format: 'uuid',
  }),
  is_public: param.bool({
    description: 'Visible to others (members of its project; everyone when it has no project)',
    default: false,
  }),
};
const UPDATE_DOCUMENT = {
  document_id: documentId,
  title: param.str({ description: 'New title (1..300 chars)', minLength: 1, maxLength: 300 }),
  content: param.str({
    description: 'New text or markdown (at most 1 MB)',
    maxLength: MAX_TEXT_CONTENT_BYTES,
    audit: 'omit',
  }),
  is_public: param.bool({ description: 'Visible to others' }),
};
const ONE_DOCUMENT = { document_id: documentId };

/**
 * The document tools: thin adapters from tool arguments to DocumentsService, which owns visibility
 * (author, or public) and the author-only edit rule. `search_documents` belongs to the RAG module.
 */
@ToolProvider({
  position: 200,
  toolset: 'docs',
  instructions: 'Document tools see the documents you wrote and the public ones of your projects.',
  scopes: [
    { name: 'docs:read', group: 'Documents', allows: 'List, search and detail of documents' },
    { name: 'docs:write', group: 'Documents', allows: 'Create, update and delete documents' },
  ],
})
@Injectable()
export class DocumentsToolProvider {
  constructor(private readonly documents: DocumentsService) {}

  @Tool({
    name: 'list_documents',
    title: 'List documents',
    description:
      'Documents you wrote or that are public (in your projects), newest first; optionally of one project and by title.',
    scope: 'docs:read',
    annotations: READ,
    output: { type: 'array', items: DOCUMENT_SUMMARY_SCHEMA },
    provenance: DOCUMENT_TEXT,
    parameters: LIST_DOCUMENTS,
  })
  async listDocuments(args: ToolArgs<typeof LIST_DOCUMENTS>, actor: Actor): Promise<ToolList> {
    const { items, truncated } = await this.documents.listVisible(actor, {
      projectId: filterOrUndefined(args.project_id) ?? null,
      query: filterOrUndefined(args.query),
      limit: args.limit,
    });
    return ToolList.of(
      items.map((document) => toToolDocumentView(document)),
      truncated,
    );
  }

  @Tool({
    name: 'get_document',
    title: 'Get a document',
    description: 'One document you may see, with its extracted text unless include_content is false.',
    scope: 'docs:read',
    annotations: READ,
    output: DOCUMENT_SCHEMA,
    provenance: DOCUMENT_TEXT,
    parameters: GET_DOCUMENT,
  })
  async getDocument(args: ToolArgs<typeof GET_DOCUMENT>, actor: Actor) {
    if (!args.include_content) {
      return toToolDocumentView(await this.documents.findVisible(actor, args.document_id));
    }
    const { document, content } = await this.documents.getWithContent(actor, args.document_id);
    return toToolDocumentView(document, content);
  }

  @Tool({
    name: 'create_document',
    title: 'Create a document',
    description:
      'Creates a text/markdown document with you as its author; it is indexed for search in the background. A project_id needs you to be an editor or owner there.',
    scope: 'docs:write',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    output: DOCUMENT_SCHEMA,
    provenance: DOCUMENT_TEXT,
    parameters: CREATE_DOCUMENT,
  })
  async createDocument(args: ToolArgs<typeof CREATE_DOCUMENT>, actor: Actor) {
    const document = await this.documents.createFromText(actor, {
      title: args.title,
      content: args.content,
      projectId: filterOrUndefined(args.project_id) ?? null,
      isPublic: args.is_public,
    });
    return toToolDocumentView(document, args.content);
  }

  @Tool({
    name: 'update_document',
    title: 'Update a document',
    description: 'Changes any of title, content, is_public. Only the author may update; new content is re-indexed.',
    scope: 'docs:write',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    output: DOCUMENT_SCHEMA,
    provenance: DOCUMENT_TEXT,
    parameters: UPDATE_DOCUMENT,
  })
  async updateDocument(args: ToolArgs<typeof UPDATE_DOCUMENT>, actor: Actor) {
    await this.documents.update(actor, args.document_id, {
      title: args.title,
      content: args.content,
      isPublic: args.is_public,
    });
    const { document, content } = await this.documents.getWithContent(actor, args.document_id);
    return toToolDocumentView(document, content);
  }

  @Tool({
    name: 'delete_document',
    title: 'Delete a document',
    description: 'Deletes a document and its search chunks. Only its author may delete it.',
    scope: 'docs:write',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    output: DELETED_SCHEMA,
    provenance: { kind: 'none' },
    parameters: ONE_DOCUMENT,
  })
  deleteDocument(args: ToolArgs<typeof ONE_DOCUMENT>, actor: Actor) {
    return this.documents.delete(actor, args.document_id);
  }
}
