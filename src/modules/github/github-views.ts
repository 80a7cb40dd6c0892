/**
 * Compact, stable result objects for the GitHub tools (Area A, snake_case). Only these fields leave
 * the module; raw GitHub payloads never do.
 */
export interface RepositorySummary {
  full_name: string;
  default_branch: string;
  description: string | null;
}

export interface CommitSummary {
  sha: string;
  message: string;
  author: string | null;
  date: string | null;
  url: string;
}

export interface IssueSummary {
  number: number;
  title: string;
  state: string;
  author: string | null;
  labels: string[];
  comments: number;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  url: string;
}

export interface PullRequestSummary {
  number: number;
  title: string;
  state: string;
  draft: boolean;
  author: string | null;
  head: string;
  base: string;
  created_at: string;
  updated_at: string;
  merged_at: string | null;
  url: string;
}

export interface WorkflowRunSummary {
  id: number;
  name: string | null;
  status: string | null;
  conclusion: string | null;
  branch: string | null;
  event: string;
  sha: string;
  run_number: number;
  created_at: string;
  updated_at: string;
  url: string;
}

export interface CreatedIssue {
  number: number;
  url: string;
  title: string;
}

export interface CreatedComment {
  id: number;
  url: string;
}

/** A list cut at `limit`; `truncated` says GitHub had more. */
export interface ListResult<T> {
  items: T[];
  truncated: boolean;
}

type Login = { login?: string } | null | undefined;
type Label = string | { name?: string | null };

export function toCommitSummary(commit: {
  sha: string;
  html_url: string;
  commit: { message: string; author?: { name?: string; date?: string } | null; committer?: { date?: string } | null };
  author?: Login | Record<string, unknown>;
}): CommitSummary {
  const login = (commit.author as Login)?.login;
  return {
    sha: commit.sha,
    message: commit.commit.message,
    author: commit.commit.author?.name ?? login ?? null,
    date: commit.commit.author?.date ?? commit.commit.committer?.date ?? null,
    url: commit.html_url,
  };
}

export function toIssueSummary(issue: {
  number: number;
  title: string;
  state: string;
  user?: Login;
  labels: Label[];
  comments: number;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  html_url: string;
}): IssueSummary {
  return {
    number: issue.number,
    title: issue.title,
    state: issue.state,
    author: issue.user?.login ?? null,
    labels: issue.labels.map((label) => (typeof label === 'string' ? label : (label.name ?? ''))).filter(Boolean),
    comments: issue.comments,
    created_at: issue.created_at,
    updated_at: issue.updated_at,
    closed_at: issue.closed_at,
    url: issue.html_url,
  };
}

export function toPullRequestSummary(pull: {
  number: number;
  title: string;
  state: string;
  draft?: boolean;
  user?: Login;
  head: { ref: string };
  base: { ref: string };
  created_at: string;
  updated_at: string;
  merged_at: string | null;
  html_url: string;
}): PullRequestSummary {
  return {
    number: pull.number,
    title: pull.title,
    state: pull.state,
    draft: pull.draft ?? false,
    author: pull.user?.login ?? null,
    head: pull.head.ref,
    base: pull.base.ref,
    created_at: pull.created_at,
    updated_at: pull.updated_at,
    merged_at: pull.merged_at,
    url: pull.html_url,
  };
}

export function toWorkflowRunSummary(run: {
  id: number;
  name?: string | null;
  status: string | null;
  conclusion: string | null;
  head_branch: string | null;
  event: string;
  head_sha: string;
  run_number: number;
  created_at: string;
  updated_at: string;
  html_url: string;
}): WorkflowRunSummary {
  return {
    id: run.id,
    name: run.name ?? null,
    status: run.status,
    conclusion: run.conclusion,
    branch: run.head_branch,
    event: run.event,
    sha: run.head_sha,
    run_number: run.run_number,
    created_at: run.created_at,
    updated_at: run.updated_at,
    url: run.html_url,
  };
}
