import { Injectable, OnModuleInit } from '@nestjs/common';
import {
  McpError,
  type CompleteRequestParams,
  type CompleteResult,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { KeyCaller } from '../api-keys/key-caller.js';
import { ProjectsService } from '../projects/projects.service.js';
import {
  MCP_RESOURCE_NOT_FOUND,
  McpExtensions,
  type McpExtension,
  type McpExtensionRequest,
} from '../tools/server-extensions.js';
import { toToolDocumentView } from './document-views.js';
import { DocumentsService } from './documents.service.js';

const DOCUMENT_URI = /^atrium:\/\/documents\/([0-9a-fA-F-]{36})$/;
const PROJECT_DOCUMENTS_URI = /^atrium:\/\/projects\/([0-9a-fA-F-]{36})\/documents$/;
const DOCUMENT_TEMPLATE = 'atrium://documents/{id}';
const PROJECT_DOCUMENTS_TEMPLATE = 'atrium://projects/{project_id}/documents';
/** resources/list names at most this many documents (newest first); the rest are reachable through the templates. */
const LIST_LIMIT = 200;
const COMPLETION_LIMIT = 100;

/**
 * The documents a `docs:read` credential may see, as MCP resources: `atrium://documents/{id}` (the extracted text),
 * `atrium://projects/{project_id}/documents` (the project's documents as JSON), with completions of document and
 * project ids. Every read goes through DocumentsService and ProjectsService with the credential's Actor, so the
 * owner rule and the pins are the document tools' own; an id the caller may not see is "not found", as there.
 */
@Injectable()
export class DocumentsMcpResources implements McpExtension, OnModuleInit {
  readonly toolset = 'docs';

  constructor(
    private readonly extensions: McpExtensions,
    private readonly documents: DocumentsService,
    private readonly projects: ProjectsService,
  ) {}

  onModuleInit(): void {
    this.extensions.register(this);
  }

  capabilities(caller: KeyCaller): Record<string, object> {
    return readsDocuments(caller) ? { resources: {}, completions: {} } : {};
  }

  async listResources(request: McpExtensionRequest): Promise<Resource[]> {
    if (!readsDocuments(request.caller)) return [];
    const { items } = await this.documents.listVisible(request.caller.actor, { projectId: null, limit: LIST_LIMIT });
    return items.map((document) => ({
      uri: `atrium://documents/${document.id}`,
      name: document.title,
      title: document.title,
      mimeType: 'text/plain',
      description: `Extracted text of the document (${document.mimeType}, ${document.status})`,
    }));
  }

  listResourceTemplates(request: McpExtensionRequest): ResourceTemplate[] {
    if (!readsDocuments(request.caller)) return [];
    return [
      {
        uriTemplate: DOCUMENT_TEMPLATE,
        name: 'document',
        title: 'A document',
        description: 'The extracted text of a document you may see',
        mimeType: 'text/plain',
      },
      {
        uriTemplate: PROJECT_DOCUMENTS_TEMPLATE,
        name: 'project-documents',
        title: "A project's documents",
        description: 'The documents of a project you belong to (summaries, newest first)',
        mimeType: 'application/json',
      },
    ];
  }

  async readResource(uri: string, request: McpExtensionRequest): Promise<ReadResourceResult | undefined> {
    if (!readsDocuments(request.caller)) return undefined;
    const actor = request.caller.actor;
    const documentId = DOCUMENT_URI.exec(uri)?.[1];
    if (documentId) {
      const { document, content } = await notFoundAsMcp(
        uri,
        this.documents.getWithContent(actor, documentId.toLowerCase()),
      );
      return {
        contents: [
          {
            uri,
            mimeType: 'text/plain',
            text: content ?? '',
            _meta: { 'atrium/document': toToolDocumentView(document) },
          },
        ],
      };
    }
    const projectId = PROJECT_DOCUMENTS_URI.exec(uri)?.[1];
    if (projectId) {
      const { items, truncated } = await notFoundAsMcp(
        uri,
        this.documents.listVisible(actor, { projectId: projectId.toLowerCase(), limit: LIST_LIMIT }),
      );
      const body = {
        items: items.map((document) => toToolDocumentView(document)),
        ...(truncated ? { truncated: true } : {}),
      };
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] };
    }
    return undefined;
  }

  async complete(params: CompleteRequestParams, request: McpExtensionRequest): Promise<CompleteResult | undefined> {
    if (params.ref.type !== 'ref/resource' || !readsDocuments(request.caller)) return undefined;
    const typed = params.argument.value.toLowerCase();
    if (params.ref.uri === PROJECT_DOCUMENTS_TEMPLATE && params.argument.name === 'project_id') {
      const page = await this.projects.list(request.caller.actor, { limit: COMPLETION_LIMIT });
      return completion(page.items.map((project) => project.id).filter((id) => id.startsWith(typed)));
    }
    if (params.ref.uri === DOCUMENT_TEMPLATE && params.argument.name === 'id') {
      const { items } = await this.documents.listVisible(request.caller.actor, { projectId: null, limit: LIST_LIMIT });
      return completion(items.map((document) => document.id).filter((id) => id.startsWith(typed)));
    }
    return undefined;
  }
}

function readsDocuments(caller: KeyCaller): boolean {
  return caller.scopes.includes('docs:read');
}

function completion(values: string[]): CompleteResult {
  return {
    completion: {
      values: values.slice(0, COMPLETION_LIMIT),
      total: values.length,
      hasMore: values.length > COMPLETION_LIMIT,
    },
  };
}

/** A document or project the caller may not see is the MCP "resource not found", exactly as a missing one. */
async function notFoundAsMcp<T>(uri: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof AppException && error.code === ErrorCode.NotFound)
      throw new McpError(MCP_RESOURCE_NOT_FOUND, 'Resource not found', { uri });
    throw error;
  }
}
