import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import { runAsAuditActor } from '../../src/modules/audit/audit-context.js';
import { GithubReposService } from '../../src/modules/github/github-repos.service.js';
import { actorOf, useMediumContext, type UserRow } from '../support/medium.js';

/**
 * Registered GitHub repositories on a real database, without GitHub: which ones an actor's pins leave visible,
 * how a tool's `repo` argument resolves (case-insensitively; unregistered or pinned out is not_found, so GitHub is
 * never called for it), the admin list's pages and removal. Registration (it asks GitHub) is github.e2e-spec.ts's.
 */
describe('GithubReposService (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const repos = () => medium().get(GithubReposService);
  const notFound = { code: ErrorCode.NotFound };

  let admin: UserRow;
  let member: UserRow;
  const made: Record<string, string> = {};

  /** A row as registration writes one, without a stored token (the server's GITHUB_TOKEN would be used). */
  async function registered(fullName: string, at: Date): Promise<string> {
    const [owner, name] = fullName.split('/');
    const id = randomUUID();
    await medium()
      .db.insertInto('githubRepositories')
      .values({
        id,
        owner,
        name,
        fullName,
        githubId: String(Math.floor(Math.random() * 1e9)),
        defaultBranch: 'main',
        description: null,
        isPrivate: false,
        tokenCiphertext: null,
        createdBy: admin.id,
        createdAt: at,
      })
      .execute();
    return id;
  }

  beforeAll(async () => {
    const { make } = medium();
    admin = await make.user({ role: 'admin' });
    member = await make.user();
    made.widgets = await registered('acme/widgets', new Date(Date.UTC(2026, 0, 1)));
    made.docs = await registered('acme/public-docs', new Date(Date.UTC(2026, 0, 2)));
    made.tools = await registered('Other/Tools', new Date(Date.UTC(2026, 0, 3)));
  });

  it('an unpinned actor sees every registered repository; a pinned one only its pins', async () => {
    expect((await repos().listForActor(actorOf(member))).map((r) => r.fullName).sort()).toEqual([
      'Other/Tools',
      'acme/public-docs',
      'acme/widgets',
    ]);
    expect(
      (await repos().listForActor(actorOf(member, { repos: ['acme/public-docs'] }))).map((r) => r.fullName),
    ).toEqual(['acme/public-docs']);
    expect(await repos().listForActor(actorOf(member, { repos: [] }))).toEqual([]);
  });

  it("resolves a tool's repo argument case-insensitively; unregistered or pinned out is not_found; a malformed one invalid", async () => {
    expect((await repos().resolveForActor(actorOf(member), 'ACME/Widgets')).record.id).toBe(made.widgets);
    expect((await repos().resolveForActor(actorOf(member), ' other/tools ')).token).toBeUndefined();
    await expect(repos().resolveForActor(actorOf(member), 'acme/secret')).rejects.toMatchObject(notFound);
    const pinned = actorOf(member, { repos: ['acme/public-docs'] });
    await expect(repos().resolveForActor(pinned, 'ACME/widgets')).rejects.toMatchObject(notFound);
    expect((await repos().resolveForActor(pinned, 'acme/public-docs')).record.id).toBe(made.docs);
    for (const bad of ['', 'acme', 'acme/widgets/extra', '../etc/passwd']) {
      await expect(repos().resolveForActor(actorOf(member), bad)).rejects.toMatchObject({
        code: ErrorCode.InvalidArgument,
        details: { argument: 'repo' },
      });
    }
  });

  it("the admin list pages newest first; removal takes a repository out of every actor's reach", async () => {
    const page1 = await repos().list({ limit: 2 });
    expect(page1.items.map((r) => r.id)).toEqual([made.tools, made.docs]);
    const page2 = await repos().list({ limit: 2, cursor: page1.nextCursor ?? undefined });
    expect(page2.items.map((r) => r.id)).toEqual([made.widgets]);
    expect(page2.nextCursor).toBeNull();
    expect(JSON.stringify(page1)).not.toMatch(/ciphertext/i);

    // The admin route runs as its caller, whom the removal's audit entry names.
    const asAdmin = <T>(work: () => T): T =>
      runAsAuditActor({ userId: admin.id, via: 'user_token', credentialId: null }, work);
    expect(await asAdmin(() => repos().remove(made.tools))).toEqual({ id: made.tools, deleted: true });
    await expect(asAdmin(() => repos().remove(made.tools))).rejects.toMatchObject(notFound);
    const audit = await medium()
      .db.selectFrom('auditLog')
      .select(['action', 'userId'])
      .where('targetId', '=', made.tools)
      .execute();
    expect(audit).toEqual([{ action: 'github_repo.delete', userId: admin.id }]);
    await expect(repos().resolveForActor(actorOf(member), 'Other/Tools')).rejects.toMatchObject(notFound);
    expect((await repos().listForActor(actorOf(member))).map((r) => r.fullName)).not.toContain('Other/Tools');
  });
});
