import { mayDecideAgentRun, narrowestActor } from './access-rules.js';

describe('deciding about agent runs', () => {
  it('needs at least editor (an effective role, already capped by a token)', () => {
    expect(mayDecideAgentRun('owner')).toBe(true);
    expect(mayDecideAgentRun('editor')).toBe(true);
    expect(mayDecideAgentRun('viewer')).toBe(false);
    expect(mayDecideAgentRun(null)).toBe(false);
  });

  it('an approved call runs within both actors: pins intersect, the lower cap wins', () => {
    const run = { userId: 'u', projectIds: ['p1'], repos: null };
    const token = { userId: 'u', projectIds: ['p1'], repos: [], projectRoleCap: 'editor' as const };
    expect(narrowestActor(run, token)).toEqual({
      userId: 'u',
      projectIds: ['p1'],
      repos: [],
      projectRoleCap: 'editor',
    });
    expect(
      narrowestActor(
        { ...run, repos: ['Acme/Widgets', 'acme/other'] },
        { userId: 'u', projectIds: null, repos: ['acme/widgets'] },
      ),
    ).toEqual({ userId: 'u', projectIds: ['p1'], repos: ['Acme/Widgets'] });
    expect(
      narrowestActor({ ...run, projectRoleCap: 'editor' }, { ...run, projectRoleCap: 'viewer' }).projectRoleCap,
    ).toBe('viewer');
    expect(narrowestActor({ ...run, projectIds: ['p1'] }, { ...run, projectIds: ['p2'] }).projectIds).toEqual([]);
    expect(() => narrowestActor(run, { ...run, userId: 'v' })).toThrow();
  });
});
