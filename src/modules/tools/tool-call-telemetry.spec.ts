import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { toolCallsTotal } from '../../common/metrics/metrics.registry.js';
import type { RegisteredTool } from '../tool-kit/tool-definition.js';
import { countRefusedToolCall, observeToolCall } from './tool-call-telemetry.js';

const tool = (name: string) => ({ definition: { name } }) as unknown as RegisteredTool;

async function count(labels: Record<string, string>): Promise<number> {
  const { values } = await toolCallsTotal.get();
  return values
    .filter((v) => Object.entries(labels).every(([key, value]) => (v.labels as Record<string, unknown>)[key] === value))
    .reduce((sum, v) => sum + v.value, 0);
}

describe('observeToolCall', () => {
  it('counts a call by registered tool, outcome and door, and passes its result or error through', async () => {
    const before = {
      ok: await count({ tool: 'list_tasks', status: 'ok', door: 'json' }),
      notFound: await count({ tool: 'get_task', status: 'not_found', door: 'agent' }),
      internal: await count({ tool: 'get_task', status: 'internal', door: 'mcp' }),
      timeout: await count({ tool: 'get_task', status: 'timeout', door: 'agent' }),
    };
    await expect(observeToolCall({ door: 'json', tool: tool('list_tasks') }, async () => 42)).resolves.toBe(42);
    const missing = new AppException(ErrorCode.NotFound, 'gone');
    await expect(
      observeToolCall({ door: 'agent', tool: tool('get_task') }, () => Promise.reject(missing)),
    ).rejects.toBe(missing);
    await expect(
      observeToolCall({ door: 'mcp', tool: tool('get_task') }, () => Promise.reject(new Error('bug'))),
    ).rejects.toThrow('bug');
    class Late extends Error {}
    await expect(
      observeToolCall(
        { door: 'agent', tool: tool('get_task'), statusOfError: (e) => (e instanceof Late ? 'timeout' : undefined) },
        () => Promise.reject(new Late()),
      ),
    ).rejects.toBeInstanceOf(Late);
    expect(await count({ tool: 'list_tasks', status: 'ok', door: 'json' })).toBe(before.ok + 1);
    expect(await count({ tool: 'get_task', status: 'not_found', door: 'agent' })).toBe(before.notFound + 1);
    expect(await count({ tool: 'get_task', status: 'internal', door: 'mcp' })).toBe(before.internal + 1);
    expect(await count({ tool: 'get_task', status: 'timeout', door: 'agent' })).toBe(before.timeout + 1);
  });

  it('labels a name that is not registered as unknown, never with the name sent', async () => {
    const before = await count({ tool: 'unknown', status: 'unknown_tool' });
    await expect(
      observeToolCall({ door: 'mcp', tool: undefined }, () => Promise.reject(new Error('Unknown tool: rm_rf'))),
    ).rejects.toThrow();
    countRefusedToolCall('json', undefined, new AppException(ErrorCode.UnknownTool, 'No tool named "rm_rf"'));
    expect(await count({ tool: 'unknown', status: 'unknown_tool' })).toBe(before + 2);
    const { values } = await toolCallsTotal.get();
    expect(values.some((v) => String(v.labels.tool).includes('rm_rf'))).toBe(false);
  });
});
