import type { RegisteredTool, ToolProvenance } from './tool-definition.js';
import { foreignTextIn, foreignTextInFailure } from './tool-provenance.js';

const me = '11111111-1111-4111-8111-111111111111';
const other = '22222222-2222-4222-8222-222222222222';

function tool(name: string, provenance?: ToolProvenance): RegisteredTool {
  return {
    definition: {
      name,
      title: name,
      description: '',
      scope: 'x:read',
      parameters: {},
      annotations: { readOnlyHint: true },
      output: {},
      ...(provenance ? { provenance } : {}),
    },
    handler: async () => undefined,
    toolset: 'x',
    source: 'spec',
  };
}

const task = tool('get_task', { kind: 'written', object: 'task', id: 'id', writers: ['creator_id', 'assignee_id'] });
const github = tool('list_issues', { kind: 'upstream', object: 'github', targetArgument: 'repo' });

describe('foreignTextIn', () => {
  it("own objects (lists and single) are the reader's text", () => {
    expect(foreignTextIn(task, {}, { id: 't1', creator_id: me, assignee_id: null }, me)).toBeNull();
    expect(
      foreignTextIn(
        task,
        {},
        [
          { id: 't1', creator_id: me, assignee_id: me },
          { id: 't2', creator_id: me },
        ],
        me,
      ),
    ).toBeNull();
    expect(foreignTextIn(task, {}, [], me)).toBeNull();
  });

  it('any other writer, creator or assignee, makes it foreign, naming the object', () => {
    expect(
      foreignTextIn(
        task,
        {},
        [
          { id: 't1', creator_id: me },
          { id: 't2', creator_id: other },
        ],
        me,
      ),
    ).toEqual({ target: 'task:t2' });
    expect(foreignTextIn(task, {}, { id: 't3', creator_id: me, assignee_id: other }, me)).toEqual({
      target: 'task:t3',
    });
  });

  it('denies by default: no provenance, no writer named, or an item that is not an object', () => {
    expect(foreignTextIn(tool('mystery'), {}, { text: 'hi' }, me)).toEqual({ target: 'mystery:unknown-provenance' });
    expect(foreignTextIn(task, {}, { id: 't4' }, me)).toEqual({ target: 'task:t4' });
    expect(foreignTextIn(task, {}, ['text'], me)).toEqual({ target: 'task:unknown' });
    expect(foreignTextIn(undefined, {}, {}, me)).not.toBeNull();
  });

  it('an upstream answer is always foreign, named by its argument', () => {
    expect(foreignTextIn(github, { repo: 'acme/widgets' }, [], me)).toEqual({ target: 'github:acme/widgets' });
    expect(foreignTextInFailure(github, { repo: 'acme/widgets' })).toEqual({ target: 'github:acme/widgets' });
    expect(foreignTextInFailure(task, {})).toBeNull();
  });

  it("a result with no text is nobody's", () => {
    expect(foreignTextIn(tool('task_stats', { kind: 'none' }), {}, { total: 3 }, me)).toBeNull();
  });
});
