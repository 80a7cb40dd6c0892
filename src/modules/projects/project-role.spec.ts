import { cappedRole, roleAtLeast } from './project-role.js';

describe('project roles', () => {
  it('orders owner > editor > viewer', () => {
    expect(roleAtLeast('owner', 'editor')).toBe(true);
    expect(roleAtLeast('editor', 'editor')).toBe(true);
    expect(roleAtLeast('viewer', 'editor')).toBe(false);
    expect(roleAtLeast('editor', 'owner')).toBe(false);
  });

  it('caps a role at a token role but never raises it', () => {
    expect(cappedRole('owner', 'editor')).toBe('editor');
    expect(cappedRole('owner', 'viewer')).toBe('viewer');
    expect(cappedRole('viewer', 'editor')).toBe('viewer');
    expect(cappedRole('editor', undefined)).toBe('editor');
  });
});
