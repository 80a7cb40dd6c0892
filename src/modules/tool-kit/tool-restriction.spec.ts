import {
  checkedAllowlist,
  narrowRestriction,
  pinnedArguments,
  requestNarrowing,
  restrictionKey,
  toolAllowed,
  unpinnedParameters,
  withPinnedArguments,
} from './tool-restriction.js';
import { param } from './tool-parameters.js';
import type { RegisteredTool } from './tool-definition.js';

const TOOLSETS = ['tasks', 'docs', 'github'];
const listTasks = { name: 'list_tasks', readOnly: true, toolset: 'tasks' };
const createTask = { name: 'create_task', readOnly: false, toolset: 'tasks' };
const listDocs = { name: 'list_documents', readOnly: true, toolset: 'docs' };

describe('tool restriction', () => {
  it('allows a tool only inside the allowlist, read-only choice and toolsets', () => {
    expect(toolAllowed(createTask, undefined)).toBe(true);
    const allowlist = { tools: ['list_tasks'], readOnly: false, toolsets: null };
    expect(toolAllowed(listTasks, allowlist)).toBe(true);
    expect(toolAllowed(createTask, allowlist)).toBe(false);
    const readOnly = { tools: null, readOnly: true, toolsets: null };
    expect(toolAllowed(listTasks, readOnly)).toBe(true);
    expect(toolAllowed(createTask, readOnly)).toBe(false);
    const docsOnly = { tools: null, readOnly: false, toolsets: ['docs'] };
    expect(toolAllowed(listDocs, docsOnly)).toBe(true);
    expect(toolAllowed(listTasks, docsOnly)).toBe(false);
    expect(toolAllowed({ name: 'fixture', readOnly: true, toolset: null }, docsOnly)).toBe(false);
  });

  it('stores an allowlist as given, no allowlist for an absent or null one, and refuses unknown or out-of-scope names', () => {
    const scopeOf: Record<string, string> = { list_tasks: 'tasks:read', create_task: 'tasks:write' };
    const find = (name: string) =>
      scopeOf[name] === undefined ? undefined : ({ definition: { scope: scopeOf[name] } } as unknown as RegisteredTool);
    expect(checkedAllowlist(['list_tasks', 'list_tasks'], ['tasks:read'], find)).toEqual(['list_tasks']);
    expect(checkedAllowlist(undefined, ['tasks:read'], find)).toBeNull();
    expect(checkedAllowlist(null, ['tasks:read'], find)).toBeNull();
    expect(() => checkedAllowlist(['drop_database'], ['tasks:read'], find)).toThrow(/unknown tools: drop_database/);
    expect(() => checkedAllowlist(['create_task'], ['tasks:read'], find)).toThrow(/outside them: create_task/);
  });

  it('narrows only: lists intersect, read-only sticks, a credential restriction is kept', () => {
    const stored = { tools: ['list_tasks'], readOnly: false, toolsets: null };
    expect(narrowRestriction(stored, { toolsets: null, readOnly: false })).toBe(stored);
    expect(narrowRestriction(stored, { toolsets: ['docs'], readOnly: true })).toEqual({
      tools: ['list_tasks'],
      readOnly: true,
      toolsets: ['docs'],
    });
    const twice = narrowRestriction(undefined, { toolsets: ['tasks', 'docs'], readOnly: false });
    expect(narrowRestriction(twice, { toolsets: ['docs', 'github'], readOnly: false })?.toolsets).toEqual(['docs']);
    expect(restrictionKey(undefined)).not.toBe(restrictionKey(stored));
  });

  it('reads the headers and URLs of a request, refusing unknown toolsets and odd values', () => {
    const mcp = '/api/v1/public/mcp';
    expect(requestNarrowing(mcp, {}, TOOLSETS)).toEqual({ toolsets: null, readOnly: false });
    expect(requestNarrowing(`${mcp}/readonly`, {}, TOOLSETS)).toEqual({ toolsets: null, readOnly: true });
    expect(requestNarrowing(`${mcp}/x/docs`, {}, TOOLSETS)).toEqual({ toolsets: ['docs'], readOnly: false });
    expect(requestNarrowing(`${mcp}/x/docs/readonly`, {}, TOOLSETS)).toEqual({ toolsets: ['docs'], readOnly: true });
    expect(requestNarrowing(mcp, { 'x-mcp-toolsets': ' Tasks , docs,', 'x-mcp-readonly': 'TRUE' }, TOOLSETS)).toEqual({
      toolsets: ['tasks', 'docs'],
      readOnly: true,
    });
    // A header never widens what the URL narrowed.
    expect(
      requestNarrowing(`${mcp}/x/docs/readonly`, { 'x-mcp-toolsets': 'tasks', 'x-mcp-readonly': 'false' }, TOOLSETS),
    ).toEqual({ toolsets: [], readOnly: true });
    expect(() => requestNarrowing(`${mcp}/x/wiki`, {}, TOOLSETS)).toThrow(
      /Unknown toolset "wiki".*tasks, docs, github/,
    );
    expect(() => requestNarrowing(mcp, { 'x-mcp-toolsets': 'tasks,wiki' }, TOOLSETS)).toThrow(/Unknown toolset "wiki"/);
    expect(() => requestNarrowing(mcp, { 'x-mcp-toolsets': ' , ' }, TOOLSETS)).toThrow(/X-MCP-Toolsets/);
    expect(() => requestNarrowing(mcp, { 'x-mcp-readonly': 'yes' }, TOOLSETS)).toThrow(/true or false/);
    // The JSON door's routes are not narrowed by their path.
    expect(requestNarrowing(`${mcp}/tools`, {}, TOOLSETS)).toEqual({ toolsets: null, readOnly: false });
  });

  it('drops and fills the parameters a single project or repository pin decides', () => {
    const parameters = {
      title: param.str({ description: 'Title', required: true }),
      project_id: param.str({ description: 'Project', default: '' }),
    };
    const one = { projectIds: ['p1'], repos: ['acme/widgets'] };
    expect(pinnedArguments(one)).toEqual({ project_id: 'p1', repo: 'acme/widgets' });
    expect(pinnedArguments({ projectIds: ['p1', 'p2'], repos: null })).toEqual({});
    expect(Object.keys(unpinnedParameters(parameters, one))).toEqual(['title']);
    expect(unpinnedParameters(parameters, { projectIds: null, repos: null })).toBe(parameters);
    expect(withPinnedArguments(parameters, { title: 't' }, one, true)).toEqual({ title: 't', project_id: 'p1' });
    // A read tool's optional filter: the pin already narrows the answer.
    expect(withPinnedArguments(parameters, { title: 't' }, one, false)).toEqual({ title: 't' });
    const repoParameters = { repo: param.str({ description: 'owner/name', required: true }) };
    expect(withPinnedArguments(repoParameters, {}, one, false)).toEqual({ repo: 'acme/widgets' });
    // Sent anyway: left as sent, for the pin check to judge.
    expect(withPinnedArguments(parameters, { title: 't', project_id: 'p2' }, one, true)).toEqual({
      title: 't',
      project_id: 'p2',
    });
  });
});
