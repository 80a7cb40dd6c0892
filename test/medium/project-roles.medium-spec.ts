import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../src/common/errors/error-code.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';
import { actorOf, useMediumContext, type ProjectRow, type UserRow } from '../support/medium.js';

/**
 * The one membership check every module uses (ProjectsService.requireRole / roleOf) on a real database: the
 * member's role, capped by a project token's role, inside the credential's pins; not a member, pinned elsewhere or
 * no such project is not_found, a role too low is forbidden.
 */
describe('project roles (medium: real database, no HTTP)', () => {
  const medium = useMediumContext();
  const projects = () => medium().get(ProjectsService);
  let owner: UserRow;
  let editor: UserRow;
  let viewer: UserRow;
  let stranger: UserRow;
  let project: ProjectRow;

  beforeAll(async () => {
    const { make } = medium();
    [owner, editor, viewer, stranger] = [await make.user(), await make.user(), await make.user(), await make.user()];
    project = await make.project(owner, {
      members: [
        { user: editor, role: 'editor' },
        { user: viewer, role: 'viewer' },
      ],
    });
  });

  it("roleOf: each member's own role; null for a non-member, an unknown or malformed id, or a pin elsewhere", async () => {
    expect(await projects().roleOf(actorOf(owner), project.id)).toBe('owner');
    expect(await projects().roleOf(actorOf(editor), project.id)).toBe('editor');
    expect(await projects().roleOf(actorOf(viewer), project.id)).toBe('viewer');
    expect(await projects().roleOf(actorOf(stranger), project.id)).toBeNull();
    expect(await projects().roleOf(actorOf(owner), randomUUID())).toBeNull();
    expect(await projects().roleOf(actorOf(owner), 'not-a-uuid')).toBeNull();
    expect(await projects().roleOf(actorOf(owner, { projectIds: [randomUUID()] }), project.id)).toBeNull();
    expect(await projects().roleOf(actorOf(owner, { projectIds: [project.id] }), project.id)).toBe('owner');
  });

  it("a project token's role caps the member's: never above the member's own role", async () => {
    const pinned = (user: UserRow, cap: 'editor' | 'viewer') =>
      actorOf(user, { projectIds: [project.id], projectRoleCap: cap });
    expect(await projects().roleOf(pinned(owner, 'editor'), project.id)).toBe('editor');
    expect(await projects().roleOf(pinned(owner, 'viewer'), project.id)).toBe('viewer');
    expect(await projects().roleOf(pinned(editor, 'viewer'), project.id)).toBe('viewer');
    expect(await projects().roleOf(pinned(viewer, 'editor'), project.id)).toBe('viewer');
  });

  it('requireRole: not_found outside, forbidden below the role asked for, the role when enough', async () => {
    await expect(projects().requireRole(actorOf(stranger), project.id, 'viewer')).rejects.toMatchObject({
      code: ErrorCode.NotFound,
    });
    await expect(projects().requireRole(actorOf(viewer), project.id, 'editor')).rejects.toMatchObject({
      code: ErrorCode.Forbidden,
    });
    await expect(projects().requireRole(actorOf(editor), project.id, 'owner')).rejects.toMatchObject({
      code: ErrorCode.Forbidden,
    });
    await expect(
      projects().requireRole(
        actorOf(owner, { projectIds: [project.id], projectRoleCap: 'viewer' }),
        project.id,
        'editor',
      ),
    ).rejects.toMatchObject({ code: ErrorCode.Forbidden });
    expect(await projects().requireRole(actorOf(editor), project.id, 'editor')).toBe('editor');
    expect(await projects().requireRole(actorOf(owner), project.id, 'viewer')).toBe('owner');
  });

  it("a member who leaves loses the role at once; another user's role is read without any cap", async () => {
    const { make, db } = medium();
    const leaver = await make.user();
    await make.member(project, leaver, 'editor');
    expect(await projects().memberRoleOf(project.id, leaver.id)).toBe('editor');
    await db.deleteFrom('projectMembers').where('projectId', '=', project.id).where('userId', '=', leaver.id).execute();
    expect(await projects().roleOf(actorOf(leaver), project.id)).toBeNull();
    expect(await projects().memberRoleOf(project.id, leaver.id)).toBeNull();
    expect(await projects().memberRoleOf(project.id, 'not-a-uuid')).toBeNull();
  });
});
