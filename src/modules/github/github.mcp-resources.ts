import { Injectable, OnModuleInit } from '@nestjs/common';
import {
  McpError,
  type CompleteRequestParams,
  type CompleteResult,
  type ReadResourceResult,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import type { KeyCaller } from '../api-keys/key-caller.js';
import {
  MCP_RESOURCE_NOT_FOUND,
  McpExtensions,
  type McpExtension,
  type McpExtensionRequest,
} from '../tools/server-extensions.js';
import { GithubService } from './github.service.js';

const REPOSITORY_TEMPLATE = 'atrium://repositories/{owner}/{name}';
const REPOSITORY_URI = /^atrium:\/\/repositories\/([^/]+)\/([^/]+)$/;
const COMPLETION_LIMIT = 100;

/**
 * The registered repositories a `github:read` credential may use, as an MCP resource template
 * (`atrium://repositories/{owner}/{name}`: the repository's summary, as list_repositories gives it) with completion
 * of owners and names. Only Atrium's own records are read (no GitHub call), through GithubService with the
 * credential's Actor, so a repository pin holds exactly as for the GitHub tools.
 */
@Injectable()
export class GithubMcpResources implements McpExtension, OnModuleInit {
  readonly toolset = 'github';

  constructor(
    private readonly extensions: McpExtensions,
    private readonly github: GithubService,
  ) {}

  onModuleInit(): void {
    this.extensions.register(this);
  }

  capabilities(caller: KeyCaller): Record<string, object> {
    return readsGithub(caller) ? { resources: {}, completions: {} } : {};
  }

  listResourceTemplates(request: McpExtensionRequest): ResourceTemplate[] {
    if (!readsGithub(request.caller)) return [];
    return [
      {
        uriTemplate: REPOSITORY_TEMPLATE,
        name: 'repository',
        title: 'A registered repository',
        description: 'Its full name, default branch and description',
        mimeType: 'application/json',
      },
    ];
  }

  async readResource(uri: string, request: McpExtensionRequest): Promise<ReadResourceResult | undefined> {
    const match = REPOSITORY_URI.exec(uri);
    if (!match || !readsGithub(request.caller)) return undefined;
    const fullName = `${decodeURIComponent(match[1])}/${decodeURIComponent(match[2])}`.toLowerCase();
    const repository = (await this.github.listRepositories(request.caller.actor)).find(
      (repo) => repo.full_name.toLowerCase() === fullName,
    );
    if (!repository) throw new McpError(MCP_RESOURCE_NOT_FOUND, 'Resource not found', { uri });
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(repository) }] };
  }

  async complete(params: CompleteRequestParams, request: McpExtensionRequest): Promise<CompleteResult | undefined> {
    if (params.ref.type !== 'ref/resource' || params.ref.uri !== REPOSITORY_TEMPLATE || !readsGithub(request.caller))
      return undefined;
    const typed = params.argument.value.toLowerCase();
    const names = (await this.github.listRepositories(request.caller.actor)).map(
      (repo) => repo.full_name.split('/') as [string, string],
    );
    let values: string[];
    if (params.argument.name === 'owner') values = [...new Set(names.map(([owner]) => owner))];
    else if (params.argument.name === 'name') {
      const owner = params.context?.arguments?.owner?.toLowerCase();
      values = names.filter(([o]) => owner === undefined || o.toLowerCase() === owner).map(([, name]) => name);
    } else return undefined;
    const matching = values.filter((value) => value.toLowerCase().startsWith(typed));
    return {
      completion: {
        values: matching.slice(0, COMPLETION_LIMIT),
        total: matching.length,
        hasMore: matching.length > COMPLETION_LIMIT,
      },
    };
  }
}

function readsGithub(caller: KeyCaller): boolean {
  return caller.scopes.includes('github:read');
}
