import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for GitHub's REST API, speaking its wire format (status codes, JSON bodies, `Link`
 * pagination, `x-ratelimit-*` / `retry-after`), so the real Octokit client code runs in tests.
 *
 * - Repositories, issues (pull requests appear in the issues list as GitHub does), pulls, commits and
 *   workflow runs live in memory; tokens are granted per repository and can lose access later.
 * - `maxPerPage` caps page sizes like GitHub's 100, so pagination across pages can be tested with few rows.
 * - `failNext()` queues canned answers (5xx, 422, rate limits, delays) for the next matching requests.
 * - `useFixture()` serves a recorded `@octokit/fixtures` scenario verbatim, checking each request.
 */
export interface FakeRepo {
  owner: string;
  name: string;
  id: number;
  defaultBranch: string;
  description: string | null;
  private: boolean;
  issues: FakeIssue[];
  pulls: FakePull[];
  commits: FakeCommit[];
  runs: FakeRun[];
  comments: { id: number; issueNumber: number; body: string }[];
}
export interface FakeIssue {
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  labels: string[];
  user: string;
  isPull?: boolean;
  createdAt: string;
}
export interface FakePull {
  number: number;
  title: string;
  state: 'open' | 'closed';
  draft: boolean;
  user: string;
  head: string;
  base: string;
  createdAt: string;
  mergedAt: string | null;
}
export interface FakeCommit {
  sha: string;
  message: string;
  author: string;
  date: string;
  branch: string;
}
export interface FakeRun {
  id: number;
  name: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: 'success' | 'failure' | null;
  branch: string;
  event: string;
  sha: string;
  runNumber: number;
  createdAt: string;
}
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  body: unknown;
}
export interface CannedAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Wait this long before answering (to exercise timeouts). */
  delayMs?: number;
  /** Put the request's Authorization header into the body's message (a misbehaving upstream or proxy). */
  echoAuthorization?: boolean;
}
interface QueuedAnswer extends CannedAnswer {
  method?: string;
  pathPattern?: RegExp;
}
interface TokenGrant {
  repos: Set<string> | 'all';
  write: boolean;
}
interface FixtureEntry {
  method: string;
  path: string;
  status: number;
  body?: unknown;
  response: unknown;
  headers: Record<string, string | string[]>;
  reqheaders?: Record<string, string>;
}

const GITHUB_DOCS = 'https://docs.github.com/rest';
const FIXTURE_HOST = 'https://api.github.com';

export class FakeGithubServer {
  readonly requests: RecordedRequest[] = [];
  /** Page-size cap (GitHub's is 100). */
  maxPerPage = 100;
  /** Core quota reported in x-ratelimit-* headers. */
  rateLimit = { limit: 5000, remaining: 4999, resetEpochSeconds: Math.floor(Date.now() / 1000) + 3600 };
  allowAnonymous = false;
  private readonly repos = new Map<string, FakeRepo>();
  private readonly tokens = new Map<string, TokenGrant>();
  private readonly queue: QueuedAnswer[] = [];
  private fixture: { entries: FixtureEntry[]; served: number } | undefined;
  private server: Server | undefined;
  private nextId = 1000;
  baseUrl = '';

  static async start(): Promise<FakeGithubServer> {
    const fake = new FakeGithubServer();
    fake.server = createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => fake.server!.listen(0, '127.0.0.1', resolve));
    fake.baseUrl = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  addRepo(owner: string, name: string, overrides: Partial<Omit<FakeRepo, 'owner' | 'name'>> = {}): FakeRepo {
    const repo: FakeRepo = {
      owner,
      name,
      id: this.nextId++,
      defaultBranch: 'main',
      description: `${name} description`,
      private: false,
      issues: [],
      pulls: [],
      commits: [],
      runs: [],
      comments: [],
      ...overrides,
    };
    this.repos.set(`${owner}/${name}`.toLowerCase(), repo);
    return repo;
  }

  /** A token that can see these repositories (`'all'` = every one); read-only unless `write`. */
  grant(token: string, repos: string[] | 'all', options: { write?: boolean } = {}): void {
    this.tokens.set(token, {
      repos: repos === 'all' ? 'all' : new Set(repos.map((r) => r.toLowerCase())),
      write: options.write ?? true,
    });
  }

  /** The token stays valid but no longer sees the repository (GitHub then answers 404). */
  revokeAccess(token: string, repo: string): void {
    const grant = this.tokens.get(token);
    if (grant && grant.repos !== 'all') grant.repos.delete(repo.toLowerCase());
  }

  /** The token itself is revoked (GitHub then answers 401 Bad credentials). */
  revokeToken(token: string): void {
    this.tokens.delete(token);
  }

  /** Answer the next `times` matching requests with this instead of the simulated API. */
  failNext(answer: CannedAnswer & { method?: string; path?: RegExp; times?: number }): void {
    for (let i = 0; i < (answer.times ?? 1); i += 1) this.queue.push({ ...answer, pathPattern: answer.path });
  }

  /** GitHub's primary rate limit: 403, x-ratelimit-remaining 0, reset in `resetInSeconds`. */
  static primaryRateLimit(resetInSeconds: number): CannedAnswer {
    return {
      status: 403,
      headers: {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + resetInSeconds),
        'x-ratelimit-resource': 'core',
      },
      body: {
        message: 'API rate limit exceeded for user ID 1.',
        documentation_url: `${GITHUB_DOCS}/overview/rate-limits-for-the-rest-api`,
      },
    };
  }

  /** GitHub's secondary rate limit: 403 (or 429) with a retry-after header. */
  static secondaryRateLimit(retryAfterSeconds: number, status = 403): CannedAnswer {
    return {
      status,
      headers: { 'retry-after': String(retryAfterSeconds) },
      body: {
        message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
        documentation_url: `${GITHUB_DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits`,
      },
    };
  }

  /** Serve a recorded @octokit/fixtures scenario (e.g. "get-repository"): requests must match in order. */
  useFixture(scenario: string): FixtureEntry[] {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const entries = require(
      `@octokit/fixtures/scenarios/api.github.com/${scenario}/normalized-fixture.json`,
    ) as FixtureEntry[];
    this.fixture = { entries: structuredClone(entries), served: 0 };
    return this.fixture.entries;
  }

  fixtureDone(): boolean {
    return this.fixture !== undefined && this.fixture.served === this.fixture.entries.length;
  }

  clearFixture(): void {
    this.fixture = undefined;
  }

  requestsTo(pathPrefix: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path.startsWith(pathPrefix));
  }

  // -------------------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.baseUrl);
    const raw = await readBody(req);
    let body: unknown = undefined;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        return this.send(res, 400, { message: 'Problems parsing JSON', documentation_url: GITHUB_DOCS });
      }
    }
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: req.headers.authorization,
      body,
    };
    this.requests.push(record);

    if (this.fixture) return this.serveFixture(req, url, body, res);

    const queued = this.queue.findIndex(
      (q) => (!q.method || q.method === record.method) && (!q.pathPattern || q.pathPattern.test(url.pathname)),
    );
    if (queued !== -1) {
      const [answer] = this.queue.splice(queued, 1);
      if (answer.delayMs) await sleep(answer.delayMs);
      if (res.destroyed) return;
      const body = answer.echoAuthorization
        ? {
            message: `Bad credentials for ${req.headers.authorization ?? ''}`,
            errors: [{ message: String(req.headers.authorization) }],
          }
        : (answer.body ?? {});
      return this.send(res, answer.status, body, answer.headers);
    }
    try {
      this.route(record, url, res);
    } catch (error) {
      this.send(res, 500, { message: `fake GitHub failed: ${(error as Error).message}` });
    }
  }

  private route(request: RecordedRequest, url: URL, res: ServerResponse): void {
    const match = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(url.pathname);
    if (!match) return this.send(res, 404, { message: 'Not Found', documentation_url: GITHUB_DOCS });
    const fullName = `${match[1]}/${match[2]}`.toLowerCase();
    const rest = match[3] ?? '';

    const token = /^(?:token|bearer)\s+(\S+)$/i.exec(request.authorization ?? '')?.[1];
    const grant = token === undefined ? undefined : this.tokens.get(token);
    if (token !== undefined && !grant)
      return this.send(res, 401, { message: 'Bad credentials', documentation_url: GITHUB_DOCS });
    if (token === undefined && !this.allowAnonymous) {
      return this.send(res, 401, { message: 'Requires authentication', documentation_url: GITHUB_DOCS });
    }
    const repo = this.repos.get(fullName);
    const canSee = repo !== undefined && (grant ? grant.repos === 'all' || grant.repos.has(fullName) : !repo.private);
    if (!repo || !canSee) return this.send(res, 404, { message: 'Not Found', documentation_url: GITHUB_DOCS });

    const write = request.method !== 'GET';
    if (write && !grant?.write) {
      return this.send(res, 403, {
        message: 'Resource not accessible by personal access token',
        documentation_url: GITHUB_DOCS,
      });
    }
    const api = this.baseUrl;
    const html = `https://github.com/${repo.owner}/${repo.name}`;
    const q = request.query;

    if (request.method === 'GET' && rest === '') {
      return this.send(res, 200, {
        id: repo.id,
        name: repo.name,
        full_name: `${repo.owner}/${repo.name}`,
        private: repo.private,
        owner: { login: repo.owner, id: 1, type: 'Organization' },
        html_url: html,
        description: repo.description,
        default_branch: repo.defaultBranch,
        url: `${api}/repos/${repo.owner}/${repo.name}`,
        ...(grant
          ? { permissions: { admin: false, maintain: false, push: grant.write, triage: grant.write, pull: true } }
          : {}),
      });
    }
    if (request.method === 'GET' && rest === '/commits') {
      const branch = q.sha ?? repo.defaultBranch;
      let commits = repo.commits.filter((c) => c.branch === branch);
      if (q.since) commits = commits.filter((c) => c.date >= q.since);
      commits.sort((a, b) => b.date.localeCompare(a.date));
      return this.sendPage(res, url, commits, (c) => ({
        sha: c.sha,
        node_id: 'C_x',
        commit: {
          author: { name: c.author, email: `${c.author}@example.com`, date: c.date },
          committer: { name: c.author, date: c.date },
          message: c.message,
          tree: {},
        },
        url: `${api}/repos/${repo.owner}/${repo.name}/commits/${c.sha}`,
        html_url: `${html}/commit/${c.sha}`,
        author: { login: c.author.toLowerCase().replace(/\s+/g, '-'), id: 7 },
        committer: null,
        parents: [],
      }));
    }
    if (request.method === 'GET' && rest === '/issues') {
      const state = q.state ?? 'open';
      const labels = (q.labels ?? '').split(',').filter(Boolean);
      const issues = repo.issues
        .filter((i) => state === 'all' || i.state === state)
        .filter((i) => labels.every((l) => i.labels.includes(l)))
        .sort((a, b) => b.number - a.number);
      return this.sendPage(res, url, issues, (i) => this.issueJson(repo, i));
    }
    if (request.method === 'POST' && rest === '/issues') {
      const input = request.body as { title?: unknown; body?: unknown; labels?: unknown };
      if (typeof input?.title !== 'string' || input.title === '') {
        return this.send(res, 422, {
          message: 'Validation Failed',
          errors: [{ resource: 'Issue', code: 'missing_field', field: 'title' }],
          documentation_url: GITHUB_DOCS,
        });
      }
      const number = Math.max(0, ...repo.issues.map((i) => i.number), ...repo.pulls.map((p) => p.number)) + 1;
      const issue: FakeIssue = {
        number,
        title: input.title,
        body: typeof input.body === 'string' ? input.body : null,
        state: 'open',
        labels: Array.isArray(input.labels) ? (input.labels as string[]) : [],
        user: 'atrium-bot',
        createdAt: new Date().toISOString(),
      };
      repo.issues.push(issue);
      return this.send(res, 201, this.issueJson(repo, issue), {
        location: `${api}/repos/${repo.owner}/${repo.name}/issues/${number}`,
      });
    }
    const comment = /^\/issues\/(\d+)\/comments$/.exec(rest);
    if (request.method === 'POST' && comment) {
      const issueNumber = Number(comment[1]);
      if (!repo.issues.some((i) => i.number === issueNumber))
        return this.send(res, 404, { message: 'Not Found', documentation_url: GITHUB_DOCS });
      const text = (request.body as { body?: unknown })?.body;
      if (typeof text !== 'string' || text === '') {
        return this.send(res, 422, {
          message: 'Validation Failed',
          errors: [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }],
        });
      }
      const id = this.nextId++;
      repo.comments.push({ id, issueNumber, body: text });
      return this.send(res, 201, {
        id,
        node_id: 'IC_x',
        url: `${api}/repos/${repo.owner}/${repo.name}/issues/comments/${id}`,
        html_url: `${html}/issues/${issueNumber}#issuecomment-${id}`,
        body: text,
        user: { login: 'atrium-bot', id: 9 },
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      });
    }
    if (request.method === 'GET' && rest === '/pulls') {
      const state = q.state ?? 'open';
      const pulls = repo.pulls.filter((p) => state === 'all' || p.state === state).sort((a, b) => b.number - a.number);
      return this.sendPage(res, url, pulls, (p) => ({
        id: p.number * 10,
        number: p.number,
        state: p.state,
        title: p.title,
        draft: p.draft,
        user: { login: p.user, id: 3 },
        head: { ref: p.head, sha: 'h'.repeat(40), label: `${repo.owner}:${p.head}` },
        base: { ref: p.base, sha: 'b'.repeat(40), label: `${repo.owner}:${p.base}` },
        html_url: `${html}/pull/${p.number}`,
        body: 'pull request body '.repeat(20),
        created_at: p.createdAt,
        updated_at: p.createdAt,
        closed_at: p.mergedAt,
        merged_at: p.mergedAt,
      }));
    }
    if (request.method === 'GET' && rest === '/actions/runs') {
      let runs = [...repo.runs];
      if (q.branch) runs = runs.filter((r) => r.branch === q.branch);
      if (q.status) runs = runs.filter((r) => r.status === q.status || r.conclusion === q.status);
      runs.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
      return this.sendPage(
        res,
        url,
        runs,
        (r) => ({
          id: r.id,
          name: r.name,
          head_branch: r.branch,
          head_sha: r.sha,
          run_number: r.runNumber,
          event: r.event,
          status: r.status,
          conclusion: r.conclusion,
          workflow_id: 1,
          html_url: `${html}/actions/runs/${r.id}`,
          created_at: r.createdAt,
          updated_at: r.createdAt,
          jobs_url: `${api}/repos/${repo.owner}/${repo.name}/actions/runs/${r.id}/jobs`,
        }),
        (items, total) => ({ total_count: total, workflow_runs: items }),
      );
    }
    return this.send(res, 404, { message: 'Not Found', documentation_url: GITHUB_DOCS });
  }

  private issueJson(repo: FakeRepo, issue: FakeIssue): Record<string, unknown> {
    const html = `https://github.com/${repo.owner}/${repo.name}`;
    return {
      id: issue.number * 100,
      number: issue.number,
      title: issue.title,
      body: issue.body,
      state: issue.state,
      user: { login: issue.user, id: 5 },
      labels: issue.labels.map((name, index) => ({ id: index + 1, name, color: 'ededed' })),
      comments: repo.comments.filter((c) => c.issueNumber === issue.number).length,
      html_url: issue.isPull ? `${html}/pull/${issue.number}` : `${html}/issues/${issue.number}`,
      url: `${this.baseUrl}/repos/${repo.owner}/${repo.name}/issues/${issue.number}`,
      created_at: issue.createdAt,
      updated_at: issue.createdAt,
      closed_at: issue.state === 'closed' ? issue.createdAt : null,
      ...(issue.isPull
        ? { pull_request: { url: `${this.baseUrl}/repos/${repo.owner}/${repo.name}/pulls/${issue.number}` } }
        : {}),
    };
  }

  /** GitHub-style page: `per_page` (capped), `page`, and a Link header with next/last/first/prev. */
  private sendPage<T>(
    res: ServerResponse,
    url: URL,
    all: T[],
    render: (item: T) => unknown,
    wrap?: (items: unknown[], total: number) => unknown,
  ): void {
    const perPage = Math.min(Math.max(Number(url.searchParams.get('per_page') ?? 30) || 30, 1), this.maxPerPage);
    const page = Math.max(Number(url.searchParams.get('page') ?? 1) || 1, 1);
    const lastPage = Math.max(Math.ceil(all.length / perPage), 1);
    const items = all.slice((page - 1) * perPage, page * perPage).map(render);
    const link = (p: number, rel: string) => {
      const target = new URL(url.pathname + url.search, this.baseUrl);
      target.searchParams.set('per_page', String(perPage));
      target.searchParams.set('page', String(p));
      return `<${target.toString()}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page > 1) links.push(link(page - 1, 'prev'));
    if (page < lastPage) links.push(link(page + 1, 'next'), link(lastPage, 'last'));
    if (page > 1) links.push(link(1, 'first'));
    this.send(res, 200, wrap ? wrap(items, all.length) : items, links.length ? { link: links.join(', ') } : {});
  }

  private serveFixture(req: IncomingMessage, url: URL, body: unknown, res: ServerResponse): void {
    const fixture = this.fixture!;
    const expected = fixture.entries[fixture.served];
    const problem = expected ? fixtureMismatch(expected, req, url, body) : 'no more requests expected';
    if (problem) {
      return this.send(res, 599, {
        message: `fake GitHub: request ${req.method} ${url.pathname}${url.search} does not fit the fixture: ${problem}`,
      });
    }
    fixture.served += 1;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(expected.headers)) {
      if (['content-length', 'connection', 'transfer-encoding'].includes(name.toLowerCase())) continue;
      // Recorded links point at api.github.com; point them here so Octokit's paginate follows them to us.
      headers[name] = (Array.isArray(value) ? value.join(', ') : String(value)).split(FIXTURE_HOST).join(this.baseUrl);
    }
    const payload =
      expected.response === '' ? '' : JSON.stringify(expected.response).split(FIXTURE_HOST).join(this.baseUrl);
    res.writeHead(expected.status, headers);
    res.end(payload);
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (res.destroyed) return;
    const payload = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(payload),
      'x-github-media-type': 'github.v3; format=json',
      'x-ratelimit-limit': String(this.rateLimit.limit),
      'x-ratelimit-remaining': String(this.rateLimit.remaining),
      'x-ratelimit-reset': String(this.rateLimit.resetEpochSeconds),
      'x-ratelimit-used': String(this.rateLimit.limit - this.rateLimit.remaining),
      'x-ratelimit-resource': 'core',
      ...headers,
    });
    res.end(payload);
  }
}

/** Why a request does not fit the recorded one: method, path, the recorded query (extra params allowed), body, auth. */
function fixtureMismatch(expected: FixtureEntry, req: IncomingMessage, url: URL, body: unknown): string | undefined {
  if (expected.method.toUpperCase() !== req.method) return `expected method ${expected.method.toUpperCase()}`;
  const recorded = new URL(expected.path, 'http://fixture');
  if (recorded.pathname !== url.pathname) return `expected path ${recorded.pathname}`;
  for (const [name, value] of recorded.searchParams) {
    if (url.searchParams.get(name) !== value) return `expected query ${name}=${value}`;
  }
  if (
    expected.body !== undefined &&
    expected.body !== '' &&
    expected.body !== null &&
    JSON.stringify(sortKeys(expected.body)) !== JSON.stringify(sortKeys(body))
  ) {
    return `expected body ${JSON.stringify(expected.body)}`;
  }
  const auth = expected.reqheaders?.authorization;
  if (auth && req.headers.authorization?.replace(/^bearer /i, 'token ') !== auth)
    return `expected authorization ${auth}`;
  return undefined;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * acme/widgets as the GitHub suites know it: seven issues (two of them pull requests, labels on some), two pull
 * requests, five commits on trunk and one on a feature branch, three workflow runs.
 */
export function seedWidgets(github: FakeGithubServer): FakeRepo {
  const acme = github.addRepo('acme', 'widgets', { description: 'Widgets', defaultBranch: 'trunk', private: true });
  for (let n = 1; n <= 7; n += 1) {
    acme.issues.push({
      number: n,
      title: `Issue ${n}`,
      body: 'text',
      state: n === 2 ? 'closed' : 'open',
      labels: n % 2 === 0 ? ['bug'] : n === 5 ? ['bug', 'ui'] : [],
      user: 'octocat',
      isPull: n === 3 || n === 6,
      createdAt: `2026-01-0${n}T10:00:00Z`,
    });
  }
  acme.pulls.push(
    {
      number: 3,
      title: 'Fix A',
      state: 'open',
      draft: false,
      user: 'dev',
      head: 'fix-a',
      base: 'trunk',
      createdAt: '2026-01-03T10:00:00Z',
      mergedAt: null,
    },
    {
      number: 6,
      title: 'Merged B',
      state: 'closed',
      draft: false,
      user: 'dev',
      head: 'b',
      base: 'trunk',
      createdAt: '2026-01-06T10:00:00Z',
      mergedAt: '2026-01-07T10:00:00Z',
    },
  );
  for (let n = 1; n <= 5; n += 1) {
    acme.commits.push({
      sha: `${n}`.repeat(40),
      message: `commit ${n}`,
      author: 'Ada Lovelace',
      date: `2026-02-0${n}T12:00:00Z`,
      branch: 'trunk',
    });
  }
  acme.commits.push({
    sha: 'f'.repeat(40),
    message: 'feature work',
    author: 'Grace',
    date: '2026-02-09T12:00:00Z',
    branch: 'feature',
  });
  acme.runs.push(
    {
      id: 11,
      name: 'CI',
      status: 'completed',
      conclusion: 'success',
      branch: 'trunk',
      event: 'push',
      sha: '1'.repeat(40),
      runNumber: 1,
      createdAt: '2026-03-01T00:00:00Z',
    },
    {
      id: 12,
      name: 'CI',
      status: 'completed',
      conclusion: 'failure',
      branch: 'feature',
      event: 'push',
      sha: 'f'.repeat(40),
      runNumber: 2,
      createdAt: '2026-03-02T00:00:00Z',
    },
    {
      id: 13,
      name: 'CI',
      status: 'in_progress',
      conclusion: null,
      branch: 'trunk',
      event: 'pull_request',
      sha: '2'.repeat(40),
      runNumber: 3,
      createdAt: '2026-03-03T00:00:00Z',
    },
  );
  return acme;
}
