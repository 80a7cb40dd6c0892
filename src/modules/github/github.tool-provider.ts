import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { ToolList } from '../tools/tool-definition.js';
import { param } from '../tools/tool-parameters.js';
import { Tool, ToolProvider } from '../tools/tool.decorators.js';
import { GITHUB_LIST_MAX, GithubService, ISSUE_STATES, WORKFLOW_RUN_STATUSES } from './github.service.js';
import type { ListResult } from './github-views.js';

const READ = { readOnlyHint: true, openWorldHint: true } as const;
// Creating an issue or a comment twice makes two: not idempotent (an Idempotency-Key makes a retry safe).
const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;

const repo = param.str({ description: 'A registered repository, "owner/name" (see list_repositories)', required: true, format: 'repo' });
const limit = param.int({ description: 'Maximum number of results', default: 30, minimum: 1, maximum: GITHUB_LIST_MAX });
const state = param.str({ description: 'open, closed or all', default: 'open', enum: ISSUE_STATES });

const str = { type: 'string' };
const nullableStr = { type: ['string', 'null'] };
const dateTime = { type: 'string', format: 'date-time' };
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' };
const uri = { type: 'string', format: 'uri' };
const int = { type: 'integer' };
const objectOf = (properties: Record<string, unknown>) => ({ type: 'object', properties, required: Object.keys(properties) });
const arrayOf = (items: Record<string, unknown>) => ({ type: 'array', items });

const REPOSITORY_SCHEMA = objectOf({ full_name: str, default_branch: str, description: nullableStr });
const COMMIT_SCHEMA = objectOf({ sha: str, message: str, author: nullableStr, date: nullableDateTime, url: uri });
const ISSUE_SCHEMA = objectOf({
  number: int,
  title: str,
  state: str,
  author: nullableStr,
  labels: arrayOf(str),
  comments: int,
  created_at: dateTime,
  updated_at: dateTime,
  closed_at: nullableDateTime,
  url: uri,
});
const PULL_REQUEST_SCHEMA = objectOf({
  number: int,
  title: str,
  state: str,
  draft: { type: 'boolean' },
  author: nullableStr,
  head: str,
  base: str,
  created_at: dateTime,
  updated_at: dateTime,
  merged_at: nullableDateTime,
  url: uri,
});
const WORKFLOW_RUN_SCHEMA = objectOf({
  id: int,
  name: nullableStr,
  status: nullableStr,
  conclusion: nullableStr,
  branch: nullableStr,
  event: str,
  sha: str,
  run_number: int,
  created_at: dateTime,
  updated_at: dateTime,
  url: uri,
});

const orUndefined = (value: unknown): string | undefined => (value === '' || value === undefined || value === null ? undefined : String(value));
const toToolList = <T>(result: ListResult<T>): ToolList<T> => new ToolList(result.items, result.truncated);

/** The seven GitHub tools: thin adapters over GithubService, which owns registration, pins and GitHub's errors. */
@ToolProvider()
@Injectable()
export class GithubToolProvider {
  constructor(private readonly github: GithubService) {}

  @Tool({
    name: 'list_repositories',
    title: 'List GitHub repositories',
    description: 'The GitHub repositories an admin registered for this workspace (the only ones the GitHub tools can reach).',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(REPOSITORY_SCHEMA),
    parameters: {},
  })
  listRepositories(_args: Record<string, unknown>, actor: Actor) {
    return this.github.listRepositories(actor);
  }

  @Tool({
    name: 'list_commits',
    title: 'List commits',
    description: 'Recent commits of a registered repository, newest first.',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(COMMIT_SCHEMA),
    parameters: {
      repo,
      branch: param.str({ description: 'Branch (or tag / SHA) to list; empty = the default branch', default: '', maxLength: 255 }),
      since: param.date({ description: 'Only commits on or after this date (YYYY-MM-DD, UTC)', default: '' }),
      limit,
    },
  })
  async listCommits(args: Record<string, unknown>, actor: Actor) {
    return toToolList(
      await this.github.listCommits(actor, {
        repo: args.repo as string,
        branch: orUndefined(args.branch),
        since: orUndefined(args.since),
        limit: args.limit as number,
      }),
    );
  }

  @Tool({
    name: 'list_issues',
    title: 'List issues',
    description: 'Issues of a registered repository (pull requests excluded), most recently created first.',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(ISSUE_SCHEMA),
    parameters: {
      repo,
      state,
      labels: param.str({ description: 'Comma-separated label names; an issue must carry all of them. Empty = any', default: '', maxLength: 1000 }),
      limit,
    },
  })
  async listIssues(args: Record<string, unknown>, actor: Actor) {
    return toToolList(
      await this.github.listIssues(actor, {
        repo: args.repo as string,
        state: args.state as string,
        labels: orUndefined(args.labels),
        limit: args.limit as number,
      }),
    );
  }

  @Tool({
    name: 'list_pull_requests',
    title: 'List pull requests',
    description: 'Pull requests of a registered repository, most recently created first.',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(PULL_REQUEST_SCHEMA),
    parameters: { repo, state, limit },
  })
  async listPullRequests(args: Record<string, unknown>, actor: Actor) {
    return toToolList(await this.github.listPullRequests(actor, { repo: args.repo as string, state: args.state as string, limit: args.limit as number }));
  }

  @Tool({
    name: 'list_workflow_runs',
    title: 'List workflow runs',
    description: 'GitHub Actions workflow runs of a registered repository, newest first.',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(WORKFLOW_RUN_SCHEMA),
    parameters: {
      repo,
      branch: param.str({ description: 'Only runs for this branch; empty = all branches', default: '', maxLength: 255 }),
      status: param.str({ description: 'Only runs with this status or conclusion; empty = any', default: '', enum: WORKFLOW_RUN_STATUSES }),
      limit,
    },
  })
  async listWorkflowRuns(args: Record<string, unknown>, actor: Actor) {
    return toToolList(
      await this.github.listWorkflowRuns(actor, {
        repo: args.repo as string,
        branch: orUndefined(args.branch),
        status: orUndefined(args.status),
        limit: args.limit as number,
      }),
    );
  }

  @Tool({
    name: 'create_issue',
    title: 'Create an issue',
    description: 'Opens an issue in a registered repository. Labels that do not exist in the repository are created by GitHub only if the token may.',
    scope: 'github:write',
    annotations: WRITE,
    output: objectOf({ number: int, url: uri, title: str }),
    parameters: {
      repo,
      title: param.str({ description: 'Issue title', required: true, minLength: 1, maxLength: 256 }),
      body: param.str({ description: 'Issue text (Markdown)', default: '', maxLength: 65_536 }),
      labels: param.strList({ description: 'Label names to apply', default: [], maxItems: 20, maxLength: 100 }),
    },
  })
  createIssue(args: Record<string, unknown>, actor: Actor) {
    return this.github.createIssue(actor, {
      repo: args.repo as string,
      title: args.title as string,
      body: args.body as string,
      labels: args.labels as string[],
    });
  }

  @Tool({
    name: 'create_issue_comment',
    title: 'Comment on an issue',
    description: 'Adds a comment to an issue or pull request of a registered repository.',
    scope: 'github:write',
    annotations: WRITE,
    output: objectOf({ id: int, url: uri }),
    parameters: {
      repo,
      issue_number: param.int({ description: 'The issue or pull request number', required: true, minimum: 1 }),
      body: param.str({ description: 'Comment text (Markdown)', required: true, minLength: 1, maxLength: 65_536 }),
    },
  })
  createIssueComment(args: Record<string, unknown>, actor: Actor) {
    return this.github.createIssueComment(actor, {
      repo: args.repo as string,
      issue_number: args.issue_number as number,
      body: args.body as string,
    });
  }
}
