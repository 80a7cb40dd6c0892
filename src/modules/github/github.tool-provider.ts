import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import { ToolList } from '../tool-kit/tool-definition.js';
import { filterOrUndefined, param, type ToolArgs } from '../tool-kit/tool-parameters.js';
import { Tool, ToolProvider } from '../tool-kit/tool.decorators.js';
import { GITHUB_LIST_MAX, GithubService, ISSUE_STATES, WORKFLOW_RUN_STATUSES } from './github.service.js';
import type { ListResult } from './github-views.js';

const READ = { readOnlyHint: true, openWorldHint: true } as const;
// Creating an issue or a comment twice makes two: not idempotent (an Idempotency-Key makes a retry safe).
const WRITE = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;
/** Whatever GitHub answers (issue and PR bodies, commit messages, descriptions) is text from outside Atrium. */
const FROM_GITHUB = { kind: 'upstream', object: 'github', targetArgument: 'repo' } as const;

const repo = param.str({
  description: 'A registered repository, "owner/name" (see list_repositories)',
  required: true,
  format: 'repo',
});
const limit = param.int({
  description: 'Maximum number of results',
  default: 30,
  minimum: 1,
  maximum: GITHUB_LIST_MAX,
});
const state = param.str({ description: 'open, closed or all', default: 'open', enum: ISSUE_STATES });

const LIST_COMMITS = {
  repo,
  branch: param.str({
    description: 'Branch (or tag / SHA) to list; empty = the default branch',
    default: '',
    maxLength: 255,
  }),
  since: param.date({ description: 'Only commits on or after this date (YYYY-MM-DD, UTC)', default: '' }),
  limit,
};
const LIST_ISSUES = {
  repo,
  state,
  labels: param.str({
    description: 'Comma-separated label names; an issue must carry all of them. Empty = any',
    default: '',
    maxLength: 1000,
  }),
  limit,
};
const LIST_PULL_REQUESTS = { repo, state, limit };
const LIST_WORKFLOW_RUNS = {
  repo,
  branch: param.str({ description: 'Only runs for this branch; empty = all branches', default: '', maxLength: 255 }),
  status: param.str({
    description: 'Only runs with this status or conclusion; empty = any',
    default: '',
    enum: WORKFLOW_RUN_STATUSES,
  }),
  limit,
};
const CREATE_ISSUE = {
  repo,
  title: param.str({ description: 'Issue title', required: true, minLength: 1, maxLength: 256, trim: true }),
  body: param.str({ description: 'Issue text (Markdown)', default: '', maxLength: 65_536, audit: 'omit' }),
  labels: param.strList({ description: 'Label names to apply', default: [], maxItems: 20, maxLength: 100, trim: true }),
};
const CREATE_ISSUE_COMMENT = {
  repo,
  issue_number: param.int({ description: 'The issue or pull request number', required: true, minimum: 1 }),
  body: param.str({
    description: 'Comment text (Markdown)',
    required: true,
    minLength: 1,
    maxLength: 65_536,
    audit: 'omit',
  }),
};

const str = { type: 'string' };
const nullableStr = { type: ['string', 'null'] };
const dateTime = { type: 'string', format: 'date-time' };
const nullableDateTime = { type: ['string', 'null'], format: 'date-time' };
const uri = { type: 'string', format: 'uri' };
const int = { type: 'integer' };
const objectOf = (properties: Record<string, unknown>) => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
});
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

const toToolList = <T>(result: ListResult<T>): ToolList<T> => ToolList.of(result.items, result.truncated);

/** The seven GitHub tools: thin adapters over GithubService, which owns registration, pins and GitHub's errors. */
@ToolProvider({
  position: 300,
  toolset: 'github',
  instructions: 'GitHub tools reach only the repositories an admin registered; list_repositories names them.',
  scopes: [
    { name: 'github:read', group: 'GitHub', allows: 'Read commits, issues, pull requests and workflows' },
    { name: 'github:write', group: 'GitHub', allows: 'Create issues and write comments' },
  ],
})
@Injectable()
export class GithubToolProvider {
  constructor(private readonly github: GithubService) {}

  @Tool({
    name: 'list_repositories',
    title: 'List GitHub repositories',
    description:
      'The GitHub repositories an admin registered for this workspace (the only ones the GitHub tools can reach).',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(REPOSITORY_SCHEMA),
    provenance: FROM_GITHUB,
    parameters: {},
  })
  listRepositories(_args: Record<string, never>, actor: Actor) {
    return this.github.listRepositories(actor);
  }

  @Tool({
    name: 'list_commits',
    title: 'List commits',
    description: 'Recent commits of a registered repository, newest first.',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(COMMIT_SCHEMA),
    provenance: FROM_GITHUB,
    parameters: LIST_COMMITS,
  })
  async listCommits(args: ToolArgs<typeof LIST_COMMITS>, actor: Actor) {
    return toToolList(
      await this.github.listCommits(actor, {
        repo: args.repo,
        branch: filterOrUndefined(args.branch),
        since: filterOrUndefined(args.since),
        limit: args.limit,
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
    provenance: FROM_GITHUB,
    parameters: LIST_ISSUES,
  })
  async listIssues(args: ToolArgs<typeof LIST_ISSUES>, actor: Actor) {
    return toToolList(
      await this.github.listIssues(actor, {
        repo: args.repo,
        state: args.state,
        labels: filterOrUndefined(args.labels),
        limit: args.limit,
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
    provenance: FROM_GITHUB,
    parameters: LIST_PULL_REQUESTS,
  })
  async listPullRequests(args: ToolArgs<typeof LIST_PULL_REQUESTS>, actor: Actor) {
    return toToolList(
      await this.github.listPullRequests(actor, { repo: args.repo, state: args.state, limit: args.limit }),
    );
  }

  @Tool({
    name: 'list_workflow_runs',
    title: 'List workflow runs',
    description: 'GitHub Actions workflow runs of a registered repository, newest first.',
    scope: 'github:read',
    annotations: READ,
    output: arrayOf(WORKFLOW_RUN_SCHEMA),
    provenance: FROM_GITHUB,
    parameters: LIST_WORKFLOW_RUNS,
  })
  async listWorkflowRuns(args: ToolArgs<typeof LIST_WORKFLOW_RUNS>, actor: Actor) {
    return toToolList(
      await this.github.listWorkflowRuns(actor, {
        repo: args.repo,
        branch: filterOrUndefined(args.branch),
        status: filterOrUndefined(args.status),
        limit: args.limit,
      }),
    );
  }

  @Tool({
    name: 'create_issue',
    title: 'Create an issue',
    description:
      'Opens an issue in a registered repository. Labels that do not exist in the repository are created by GitHub only if the token may.',
    scope: 'github:write',
    annotations: WRITE,
    output: objectOf({ number: int, url: uri, title: str }),
    provenance: FROM_GITHUB,
    parameters: CREATE_ISSUE,
  })
  createIssue(args: ToolArgs<typeof CREATE_ISSUE>, actor: Actor) {
    return this.github.createIssue(actor, { repo: args.repo, title: args.title, body: args.body, labels: args.labels });
  }

  @Tool({
    name: 'create_issue_comment',
    title: 'Comment on an issue',
    description: 'Adds a comment to an issue or pull request of a registered repository.',
    scope: 'github:write',
    annotations: WRITE,
    output: objectOf({ id: int, url: uri }),
    provenance: FROM_GITHUB,
    parameters: CREATE_ISSUE_COMMENT,
  })
  createIssueComment(args: ToolArgs<typeof CREATE_ISSUE_COMMENT>, actor: Actor) {
    return this.github.createIssueComment(actor, { repo: args.repo, issueNumber: args.issue_number, body: args.body });
  }
}
