import { ErrorCode } from '../../src/common/errors/error-code.js';
import { GithubClientFactory } from '../../src/modules/github/github-client.factory.js';
import { toGithubAppException } from '../../src/modules/github/github-errors.js';
import { GithubReposService } from '../../src/modules/github/github-repos.service.js';
import { GithubService } from '../../src/modules/github/github.service.js';
import { FakeGithubServer, seedWidgets } from '../support/fake-github-server.js';
import { actorOf, useMediumContext, type UserRow } from '../support/medium.js';

const SERVER_TOKEN = 'ghp_server0000000000000000000000000000';
const ACME_TOKEN = 'ghp_acmeRepoToken1111111111111111111111';
const FIXTURE_TOKEN = '0000000000000000000000000000000000000001';

/**
 * GithubService against a GitHub that speaks the real wire format (a local server, and @octokit/fixtures'
 * recorded answers): what each operation asks GitHub, what it answers, and how GitHub's failures become
 * Atrium's errors. The door's part (catalog, argument validation, X-Truncated, Idempotency-Key, the admin routes) is
 * in test/github.e2e-spec.ts.
 */
describe('GitHub operations (medium)', () => {
  let github: FakeGithubServer;
  beforeAll(async () => {
    github = await FakeGithubServer.start();
  });
  afterAll(async () => {
    await github?.stop();
  });

  const medium = useMediumContext({
    env: {
      get GITHUB_API_URL() {
        return github.baseUrl;
      },
      GITHUB_TOKEN: SERVER_TOKEN,
      GITHUB_TIMEOUT_MS: '1000',
      GITHUB_MAX_RETRIES: '1',
    },
  });
  let admin: UserRow;
  let member: UserRow;
  const service = () => medium().get(GithubService);
  const register = (input: { owner: string; name: string; token?: string }) =>
    medium().get(GithubReposService).register(input, admin.id);
  const failure = (work: Promise<unknown>) =>
    work.then(
      () => {
        throw new Error('expected a refusal');
      },
      (error: unknown) => error as { code: string; message: string; details: any; headers: Record<string, string> },
    );

  beforeAll(async () => {
    admin = await medium().make.user({ role: 'admin' });
    member = await medium().make.user();
    seedWidgets(github);
    github.grant(ACME_TOKEN, ['acme/widgets'], { write: true });
    github.addRepo('acme', 'public-docs', { description: null });
    github.grant(SERVER_TOKEN, ['acme/public-docs'], { write: false });
    await register({ owner: 'acme', name: 'widgets', token: ACME_TOKEN });
    await register({ owner: 'acme', name: 'public-docs' });
  });

  beforeEach(() => {
    github.maxPerPage = 100;
    github.clearFixture();
    github.requests.length = 0;
  });

  describe('reads and writes', () => {
    it('listRepositories answers the registered repositories from our own records, compactly', async () => {
      expect(await service().listRepositories(actorOf(member))).toEqual(
        expect.arrayContaining([
          { full_name: 'acme/widgets', default_branch: 'trunk', description: 'Widgets' },
          { full_name: 'acme/public-docs', default_branch: 'main', description: null },
        ]),
      );
      expect(github.requests).toHaveLength(0);
    });

    it('listCommits: branch, since, and pagination across pages up to limit, with the repository token', async () => {
      github.maxPerPage = 2;
      const four = await service().listCommits(actorOf(member), { repo: 'acme/widgets', limit: 4 });
      expect(four.items.map((c) => c.message)).toEqual(['commit 5', 'commit 4', 'commit 3', 'commit 2']);
      expect(four.items[0]).toEqual({
        sha: '5'.repeat(40),
        message: 'commit 5',
        author: 'Ada Lovelace',
        date: '2026-02-05T12:00:00Z',
        url: `https://github.com/acme/widgets/commit/${'5'.repeat(40)}`,
      });
      expect(four.truncated).toBe(true);
      expect(github.requests.map((r) => r.query.page ?? '1')).toEqual(['1', '2']);
      expect(github.requests[0].authorization).toBe(`token ${ACME_TOKEN}`);

      const all = await service().listCommits(actorOf(member), { repo: 'acme/widgets', limit: 50 });
      expect(all.items).toHaveLength(5);
      expect(all.truncated).toBe(false);

      const branch = await service().listCommits(actorOf(member), {
        repo: 'acme/widgets',
        branch: 'feature',
        since: '2026-02-08',
        limit: 30,
      });
      expect(branch.items.map((c) => c.message)).toEqual(['feature work']);
      expect(github.requests.at(-1)!.query).toMatchObject({ sha: 'feature', since: '2026-02-08T00:00:00.000Z' });
    });

    it('listIssues excludes pull requests, filters state and labels, and pages past them', async () => {
      github.maxPerPage = 2;
      const open = await service().listIssues(actorOf(member), { repo: 'acme/widgets', state: 'open', limit: 3 });
      expect(open.items.map((i) => i.number)).toEqual([7, 5, 4]);
      expect(open.items[1]).toMatchObject({
        number: 5,
        title: 'Issue 5',
        state: 'open',
        author: 'octocat',
        labels: ['bug', 'ui'],
        url: 'https://github.com/acme/widgets/issues/5',
      });
      expect(open.items[0]).not.toHaveProperty('pull_request');
      const all = await service().listIssues(actorOf(member), {
        repo: 'acme/widgets',
        state: 'all',
        labels: 'bug',
        limit: 30,
      });
      expect(all.items.map((i) => i.number)).toEqual([5, 4, 2]);
      expect(github.requests.at(-1)!.query).toMatchObject({ state: 'all', labels: 'bug' });
    });

    it('listPullRequests and listWorkflowRuns answer compact objects', async () => {
      const pulls = await service().listPullRequests(actorOf(member), {
        repo: 'acme/widgets',
        state: 'all',
        limit: 30,
      });
      expect(pulls.items).toEqual([
        expect.objectContaining({
          number: 6,
          title: 'Merged B',
          state: 'closed',
          head: 'b',
          base: 'trunk',
          merged_at: '2026-01-07T10:00:00Z',
          url: 'https://github.com/acme/widgets/pull/6',
        }),
        expect.objectContaining({
          number: 3,
          title: 'Fix A',
          state: 'open',
          draft: false,
          author: 'dev',
          merged_at: null,
        }),
      ]);
      expect(pulls.items[0]).not.toHaveProperty('body');

      const runs = await service().listWorkflowRuns(actorOf(member), { repo: 'acme/widgets', limit: 30 });
      expect(runs.items.map((r) => r.id)).toEqual([13, 12, 11]);
      expect(runs.items[0]).toEqual({
        id: 13,
        name: 'CI',
        status: 'in_progress',
        conclusion: null,
        branch: 'trunk',
        event: 'pull_request',
        sha: '2'.repeat(40),
        run_number: 3,
        created_at: '2026-03-03T00:00:00Z',
        updated_at: '2026-03-03T00:00:00Z',
        url: 'https://github.com/acme/widgets/actions/runs/13',
      });
      const failed = await service().listWorkflowRuns(actorOf(member), {
        repo: 'acme/widgets',
        status: 'failure',
        branch: 'feature',
        limit: 30,
      });
      expect(failed.items.map((r) => r.id)).toEqual([12]);
      github.maxPerPage = 1;
      const paged = await service().listWorkflowRuns(actorOf(member), { repo: 'acme/widgets', limit: 2 });
      expect(paged.items.map((r) => r.id)).toEqual([13, 12]);
      expect(paged.truncated).toBe(true);
    });

    it('createIssue and createIssueComment write through the repository token', async () => {
      const issue = await service().createIssue(actorOf(member), {
        repo: 'acme/widgets',
        title: 'Broken build',
        body: 'details',
        labels: ['bug'],
      });
      expect(issue).toEqual({ number: 8, url: 'https://github.com/acme/widgets/issues/8', title: 'Broken build' });
      expect(github.requests.at(-1)).toMatchObject({
        method: 'POST',
        path: '/repos/acme/widgets/issues',
        authorization: `token ${ACME_TOKEN}`,
        body: { title: 'Broken build', body: 'details', labels: ['bug'] },
      });
      const comment = await service().createIssueComment(actorOf(member), {
        repo: 'acme/widgets',
        issueNumber: 8,
        body: 'On it',
      });
      expect(comment).toEqual({
        id: expect.any(Number),
        url: expect.stringMatching(/^https:\/\/github.com\/acme\/widgets\/issues\/8#issuecomment-\d+$/),
      });
    });

    it('an unregistered or pinned-out repo is not_found without calling GitHub', async () => {
      github.addRepo('acme', 'secret');
      github.grant('ghp_secret', ['acme/secret']);
      expect(await failure(service().listCommits(actorOf(member), { repo: 'acme/secret', limit: 30 }))).toMatchObject({
        code: 'not_found',
      });
      const pinned = actorOf(member, { repos: ['acme/public-docs'] });
      expect(
        await failure(service().listIssues(pinned, { repo: 'ACME/widgets', state: 'open', limit: 30 })),
      ).toMatchObject({ code: 'not_found' });
      expect(
        await failure(service().createIssue(pinned, { repo: 'acme/widgets', title: 'x', body: '', labels: [] })),
      ).toMatchObject({ code: 'not_found' });
      expect(github.requests).toHaveLength(0);
      expect(await service().listRepositories(pinned)).toEqual([
        { full_name: 'acme/public-docs', default_branch: 'main', description: null },
      ]);
      await service().listIssues(pinned, { repo: 'acme/public-docs', state: 'open', limit: 30 });
      expect(github.requests[0].authorization).toBe(`token ${SERVER_TOKEN}`);
    });
  });

  describe('upstream failures', () => {
    const listPulls = () =>
      service().listPullRequests(actorOf(member), { repo: 'acme/widgets', state: 'open', limit: 30 });

    it('5xx after the retry → upstream_error with the upstream status; one retry heals a blip', async () => {
      github.failNext({ status: 502, body: { message: 'Server Error' }, times: 2 });
      expect(await failure(listPulls())).toMatchObject({
        code: 'upstream_error',
        details: { upstream: 'github', upstream_status: 502, repository: 'acme/widgets' },
      });
      expect(github.requests).toHaveLength(2);
      github.failNext({ status: 500, body: { message: 'Server Error' } });
      await listPulls();
    });

    it("writes are never retried; GitHub 422 → upstream_error with Atrium's own message and the status", async () => {
      const create = (labels: string[]) =>
        service().createIssue(actorOf(member), { repo: 'acme/widgets', title: 'once', body: '', labels });
      github.failNext({ method: 'POST', status: 503, body: { message: 'Unavailable' } });
      expect(await failure(create([]))).toMatchObject({ code: 'upstream_error' });
      expect(github.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
      github.failNext({
        method: 'POST',
        status: 422,
        body: { message: 'Validation Failed', errors: [{ resource: 'Label', code: 'invalid', field: 'labels' }] },
      });
      const refused = await failure(create(['x']));
      expect(refused.message).toMatch(/refused to create an issue in acme\/widgets \(HTTP 422/);
      expect(refused.details).toEqual({ upstream: 'github', upstream_status: 422, repository: 'acme/widgets' });
    });

    it('an upstream that echoes the Authorization header never leaks the token (operation and registration)', async () => {
      for (const status of [401, 403, 422, 500]) {
        github.failNext({ status, echoAuthorization: true, times: status >= 500 ? 2 : 1 });
        const refused = await failure(
          service().listIssues(actorOf(member), { repo: 'acme/widgets', state: 'open', limit: 30 }),
        );
        expect(refused).toMatchObject({
          code: 'upstream_error',
          details: { upstream: 'github', upstream_status: status, repository: 'acme/widgets' },
        });
        expect(JSON.stringify({ message: refused.message, details: refused.details })).not.toContain(ACME_TOKEN);
        expect(refused.message).not.toMatch(/Bad credentials for/);
      }
      github.addRepo('acme', 'echo');
      github.grant('ghp_echo_secret_value', ['acme/echo']);
      github.failNext({ status: 401, echoAuthorization: true });
      const registration = await failure(register({ owner: 'acme', name: 'echo', token: 'ghp_echo_secret_value' }));
      expect(registration.code).toBe('validation_failed');
      expect(JSON.stringify({ message: registration.message, details: registration.details })).not.toContain(
        'ghp_echo_secret_value',
      );
    });

    it('a read-only token → upstream_error 403 naming the repository', async () => {
      const refused = await failure(
        service().createIssue(actorOf(member), { repo: 'acme/public-docs', title: 'x', body: '', labels: [] }),
      );
      expect(refused.details.upstream_status).toBe(403);
      expect(refused.message).toMatch(/token used for repository acme\/public-docs is not allowed to create an issue/);
    });

    it('a token that loses access after registration → clear upstream_error (404, then 401)', async () => {
      github.addRepo('acme', 'fragile');
      github.grant('ghp_fragile', ['acme/fragile']);
      await register({ owner: 'acme', name: 'fragile', token: 'ghp_fragile' });
      const issues = () => service().listIssues(actorOf(member), { repo: 'acme/fragile', state: 'open', limit: 30 });
      await issues();
      github.revokeAccess('ghp_fragile', 'acme/fragile');
      const lost = await failure(issues());
      expect(lost.details).toMatchObject({ upstream_status: 404, repository: 'acme/fragile' });
      expect(lost.message).toMatch(/token used for acme\/fragile lost access/);
      github.revokeToken('ghp_fragile');
      const revoked = await failure(issues());
      expect(revoked.details.upstream_status).toBe(401);
      expect(revoked.message).toMatch(/rejected the token used for repository acme\/fragile/);
      expect(JSON.stringify([lost.message, revoked.message])).not.toContain('ghp_fragile');
    });

    it('a GitHub that does not answer in time → upstream_error without a status, not a hang', async () => {
      github.failNext({ status: 200, delayMs: 3000, times: 2 });
      const refused = await failure(service().listCommits(actorOf(member), { repo: 'acme/widgets', limit: 30 }));
      expect(refused.message).toMatch(/did not answer within 1000 ms/);
      expect(refused.details.upstream_status).toBeNull();
    });

    it('primary rate limit → rate_limited with Retry-After, and no more calls with that token until the reset', async () => {
      github.addRepo('acme', 'busy');
      github.grant('ghp_busy', ['acme/busy']);
      await register({ owner: 'acme', name: 'busy', token: 'ghp_busy' });
      github.requests.length = 0;
      github.failNext(FakeGithubServer.primaryRateLimit(600));
      const limited = await failure(
        service().listIssues(actorOf(member), { repo: 'acme/busy', state: 'open', limit: 30 }),
      );
      expect(limited.code).toBe('rate_limited');
      expect(Number(limited.headers['Retry-After'])).toBeGreaterThan(590);
      const again = await failure(service().listCommits(actorOf(member), { repo: 'acme/busy', limit: 30 }));
      expect(Number(again.headers['Retry-After'])).toBeGreaterThan(590);
      expect(github.requests).toHaveLength(1);
      // Another token's quota is its own.
      await service().listIssues(actorOf(member), { repo: 'acme/widgets', state: 'open', limit: 30 });
    });

    it('secondary rate limit: a short wait is retried once, a long one answers rate_limited at once', async () => {
      github.failNext(FakeGithubServer.secondaryRateLimit(1));
      expect((await listPulls()).items.length).toBeGreaterThan(0);
      expect(github.requests).toHaveLength(2);
      github.failNext(FakeGithubServer.secondaryRateLimit(120, 429));
      const limited = await failure(listPulls());
      expect(limited.headers['Retry-After']).toBe('120');
      expect(limited.details).toMatchObject({ upstream_status: 429, retry_after_seconds: 120 });
    });
  });

  describe('recorded GitHub responses (@octokit/fixtures)', () => {
    it('get-repository: registration reads the recorded repository', async () => {
      const entries = github.useFixture('get-repository');
      const registered = await register({ owner: 'octokit-fixture-org', name: 'hello-world', token: FIXTURE_TOKEN });
      const recorded = entries[0].response as { full_name: string; default_branch: string };
      expect(registered).toMatchObject({ fullName: recorded.full_name, defaultBranch: recorded.default_branch });
      expect(github.fixtureDone()).toBe(true);
    });

    it('paginate-issues: listIssues reads the recorded first page and reports truncation', async () => {
      github.addRepo('octokit-fixture-org', 'paginate-issues');
      github.grant(FIXTURE_TOKEN, 'all');
      await register({ owner: 'octokit-fixture-org', name: 'paginate-issues', token: FIXTURE_TOKEN });
      const entries = github.useFixture('paginate-issues');
      const issues = await service().listIssues(actorOf(member), {
        repo: 'octokit-fixture-org/paginate-issues',
        state: 'open',
        limit: 3,
      });
      const recorded = entries[0].response as { number: number; title: string }[];
      expect(issues.items.map((i) => i.number)).toEqual(recorded.map((i) => i.number));
      expect(issues.items[0]).toMatchObject({ title: recorded[0].title, state: 'open' });
      expect(issues.truncated).toBe(true);
    });

    it('paginate-issues: the client follows the recorded Link headers across all five pages', async () => {
      const entries = github.useFixture('paginate-issues');
      const client = medium().get(GithubClientFactory).create(FIXTURE_TOKEN);
      const issues = await client.paginate(client.rest.issues.listForRepo, {
        owner: 'octokit-fixture-org',
        repo: 'paginate-issues',
        per_page: 3,
      });
      const recorded = entries.flatMap((entry) => entry.response as { number: number }[]);
      expect(issues.map((issue) => issue.number)).toEqual(recorded.map((issue) => issue.number));
      expect(github.fixtureDone()).toBe(true);
    });

    it("errors: a recorded 422 becomes upstream_error with GitHub's field errors", async () => {
      github.useFixture('errors');
      const client = medium().get(GithubClientFactory).create(FIXTURE_TOKEN);
      const refused: unknown = await client.rest.issues
        .createLabel({ owner: 'octokit-fixture-org', repo: 'errors', name: 'foo', color: 'invalid' })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(github.fixtureDone()).toBe(true);
      const mapped = toGithubAppException(
        refused,
        { repository: 'octokit-fixture-org/errors', action: 'create a label' },
        1000,
      );
      expect(mapped.code).toBe(ErrorCode.UpstreamError);
      expect(mapped.message).toMatch(/HTTP 422/);
      expect(mapped.details).toEqual({
        upstream: 'github',
        upstream_status: 422,
        repository: 'octokit-fixture-org/errors',
      });
    });

    it('add-labels-to-issue: createIssue sends exactly the recorded request', async () => {
      github.addRepo('octokit-fixture-org', 'add-labels-to-issue');
      await register({ owner: 'octokit-fixture-org', name: 'add-labels-to-issue', token: FIXTURE_TOKEN });
      const entries = github.useFixture('add-labels-to-issue');
      const created = await service().createIssue(actorOf(member), {
        repo: 'octokit-fixture-org/add-labels-to-issue',
        title: 'Issue without a label',
        body: '',
        labels: [],
      });
      const recorded = entries[0].response as { number: number; title: string; html_url: string };
      expect(created).toEqual({ number: recorded.number, url: recorded.html_url, title: recorded.title });
    });
  });
});
