import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { type GithubClient, GithubClientFactory } from './github-client.factory.js';
import { describeFailure, type GithubCallContext, toGithubAppException } from './github-errors.js';
import { GithubReposService, type ResolvedRepo } from './github-repos.service.js';
import {
  type CommitSummary,
  type CreatedComment,
  type CreatedIssue,
  type IssueSummary,
  type ListResult,
  type PullRequestSummary,
  type RepositorySummary,
  toCommitSummary,
  toIssueSummary,
  toPullRequestSummary,
  toWorkflowRunSummary,
  type WorkflowRunSummary,
} from './github-views.js';

export const ISSUE_STATES = ['open', 'closed', 'all'] as const;
export const WORKFLOW_RUN_STATUSES = ['queued', 'in_progress', 'completed', 'success', 'failure'] as const;
export const GITHUB_LIST_MAX = 100;
/** Issues are filtered (pull requests dropped) after fetching, so a list may need several pages; cap them. */
const MAX_PAGES = 10;

export type IssueState = (typeof ISSUE_STATES)[number];
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/*
 * Inputs arrive validated by the tool parameter definitions (github.tool-provider.ts: lengths, enums, limit
 * range, real dates, `owner/name`, trimmed title and labels); the service does not check them again.
 */
export interface ListCommitsInput {
  repo: string;
  branch?: string;
  /** A calendar date YYYY-MM-DD: commits from its start, UTC. */
  since?: string;
  limit: number;
}
export interface ListIssuesInput {
  repo: string;
  state: IssueState;
  /** Comma-separated label names; an issue must carry all of them. */
  labels?: string;
  limit: number;
}
export interface ListPullRequestsInput {
  repo: string;
  state: IssueState;
  limit: number;
}
export interface ListWorkflowRunsInput {
  repo: string;
  branch?: string;
  status?: WorkflowRunStatus;
  limit: number;
}
export interface CreateIssueInput {
  repo: string;
  title: string;
  body: string;
  labels: readonly string[];
}
export interface CreateIssueCommentInput {
  repo: string;
  issueNumber: number;
  body: string;
}

interface Page<T> {
  data: T[];
  headers: { link?: string };
}

/**
 * The GitHub operations behind the tools. Every call names a registered repository the actor may see
 * (pins apply); anything else is not_found before GitHub is called. Results are compact objects.
 */
@Injectable()
export class GithubService {
  private readonly logger = new Logger(GithubService.name);

  constructor(
    private readonly registry: GithubReposService,
    private readonly clients: GithubClientFactory,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Registered repositories, from our own records: no GitHub call. */
  async listRepositories(actor: Actor): Promise<RepositorySummary[]> {
    const rows = await this.registry.listForActor(actor);
    return rows.map((row) => ({
      full_name: row.fullName,
      default_branch: row.defaultBranch,
      description: row.description,
    }));
  }

  async listCommits(actor: Actor, input: ListCommitsInput): Promise<ListResult<CommitSummary>> {
    const { limit } = input;
    const since = input.since ? `${input.since}T00:00:00.000Z` : undefined;
    return this.call(actor, input.repo, 'list commits', async (client, { owner, repo }) => {
      const pages = client.paginate.iterator(client.rest.repos.listCommits, {
        owner,
        repo,
        ...(input.branch ? { sha: input.branch } : {}),
        ...(since ? { since } : {}),
        per_page: limit,
      });
      const result = await collect(pages as AsyncIterable<Page<Parameters<typeof toCommitSummary>[0]>>, limit);
      return { items: result.items.map(toCommitSummary), truncated: result.truncated };
    });
  }

  /** Issues only: GitHub's issues endpoint also returns pull requests, which are dropped here. */
  async listIssues(actor: Actor, input: ListIssuesInput): Promise<ListResult<IssueSummary>> {
    const { limit, state } = input;
    const labels = (input.labels ?? '')
      .split(',')
      .map((label) => label.trim())
      .filter(Boolean)
      .join(',');
    return this.call(actor, input.repo, 'list issues', async (client, { owner, repo }) => {
      const pages = client.paginate.iterator(client.rest.issues.listForRepo, {
        owner,
        repo,
        state,
        ...(labels ? { labels } : {}),
        per_page: limit,
      });
      type Issue = Parameters<typeof toIssueSummary>[0] & { pull_request?: unknown };
      const result = await collect(pages as AsyncIterable<Page<Issue>>, limit, (issue) => issue.pull_request == null);
      return { items: result.items.map(toIssueSummary), truncated: result.truncated };
    });
  }

  async listPullRequests(actor: Actor, input: ListPullRequestsInput): Promise<ListResult<PullRequestSummary>> {
    const { limit, state } = input;
    return this.call(actor, input.repo, 'list pull requests', async (client, { owner, repo }) => {
      const pages = client.paginate.iterator(client.rest.pulls.list, { owner, repo, state, per_page: limit });
      const result = await collect(pages as AsyncIterable<Page<Parameters<typeof toPullRequestSummary>[0]>>, limit);
      return { items: result.items.map(toPullRequestSummary), truncated: result.truncated };
    });
  }

  async listWorkflowRuns(actor: Actor, input: ListWorkflowRunsInput): Promise<ListResult<WorkflowRunSummary>> {
    const { limit, status } = input;
    return this.call(actor, input.repo, 'list workflow runs', async (client, { owner, repo }) => {
      // The paginate plugin unwraps {total_count, workflow_runs} into plain arrays per page.
      const pages = client.paginate.iterator(client.rest.actions.listWorkflowRunsForRepo, {
        owner,
        repo,
        ...(input.branch ? { branch: input.branch } : {}),
        ...(status ? { status } : {}),
        per_page: limit,
      });
      const result = await collect(
        pages as unknown as AsyncIterable<Page<Parameters<typeof toWorkflowRunSummary>[0]>>,
        limit,
      );
      return { items: result.items.map(toWorkflowRunSummary), truncated: result.truncated };
    });
  }

  async createIssue(actor: Actor, input: CreateIssueInput): Promise<CreatedIssue> {
    const { title, body, labels } = input;
    return this.call(actor, input.repo, 'create an issue', async (client, { owner, repo }) => {
      const { data } = await client.rest.issues.create({
        owner,
        repo,
        title,
        ...(body ? { body } : {}),
        ...(labels.length > 0 ? { labels: [...labels] } : {}),
        // A write that timed out may still have happened: never repeat it blindly.
        request: { retries: 0 },
      });
      return { number: data.number, url: data.html_url, title: data.title };
    });
  }

  async createIssueComment(actor: Actor, input: CreateIssueCommentInput): Promise<CreatedComment> {
    const { issueNumber, body } = input;
    return this.call(actor, input.repo, `comment on issue #${issueNumber}`, async (client, { owner, repo }) => {
      const { data } = await client.rest.issues.createComment({
        owner,
        repo,
        issue_number: issueNumber,
        body,
        request: { retries: 0 },
      });
      return { id: data.id, url: data.html_url };
    });
  }

  /** Resolves the repository for the actor (not_found first, no GitHub call), then maps GitHub's failures. */
  private async call<T>(
    actor: Actor,
    repoArgument: string,
    action: string,
    work: (client: GithubClient, target: { owner: string; repo: string }) => Promise<T>,
  ): Promise<T> {
    const resolved: ResolvedRepo = await this.registry.resolveForActor(actor, repoArgument);
    const context: GithubCallContext = { repository: resolved.record.fullName, action };
    const client = this.clients.create(resolved.token);
    try {
      return await work(client, { owner: resolved.record.owner, repo: resolved.record.name });
    } catch (error) {
      const failure = describeFailure(error);
      // Why a call got no answer (e.g. connect ECONNREFUSED) is for operators: the caller gets a fixed message.
      if (failure.status === null && !failure.timedOut)
        this.logger.warn({ msg: 'GitHub unreachable', repository: context.repository, reason: failure.reason });
      throw toGithubAppException(error, context, this.config.github.timeoutMs);
    }
  }
}

/** Reads pages until `limit` items passed `keep`; `truncated` when GitHub had more. */
async function collect<T>(
  pages: AsyncIterable<Page<T>>,
  limit: number,
  keep: (item: T) => boolean = () => true,
): Promise<ListResult<T>> {
  const items: T[] = [];
  let pageCount = 0;
  for await (const page of pages) {
    pageCount += 1;
    for (const item of page.data.filter(keep)) {
      if (items.length === limit) return { items, truncated: true };
      items.push(item);
    }
    const hasNext = /rel="next"/.test(page.headers.link ?? '');
    if (items.length === limit || pageCount >= MAX_PAGES) return { items, truncated: hasNext };
  }
  return { items, truncated: false };
}
