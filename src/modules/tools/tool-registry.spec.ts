import { Injectable, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { Actor } from '../../common/auth/actor.js';
import { ToolDefinitionError, ToolList, type ToolDefinition } from './tool-definition.js';
import { param } from './tool-parameters.js';
import { Tool, ToolProvider } from './tool.decorators.js';
import { ToolExplorer } from './tool.explorer.js';
import { ToolRegistry } from './tool-registry.js';
import { ToolsService } from './tools.service.js';

const base = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  title: name,
  description: `The ${name} tool`,
  scope: 'tasks:read',
  parameters: { limit: param.int({ description: 'limit', default: 2, minimum: 1, maximum: 5 }) },
  annotations: { readOnlyHint: true },
  output: { type: 'array', items: { type: 'integer' } },
  ...extra,
});

@ToolProvider()
@Injectable()
class NumbersProvider {
  @Tool(base('zzz_numbers'))
  async numbers(args: Record<string, unknown>, actor: Actor) {
    return ToolList.fromRows([1, 2, 3, 4, 5, 6].map((n) => n + actor.userId.length * 0), args.limit as number);
  }

  @Tool(base('get_task', { parameters: {} , output: { type: 'object' } }))
  async whoami(_args: Record<string, unknown>, actor: Actor) {
    return { user: actor.userId };
  }
}

@ToolProvider()
@Injectable()
class DuplicateProvider {
  @Tool(base('zzz_numbers'))
  async again() {
    return [];
  }
}

@ToolProvider()
@Injectable()
class BadProvider {
  @Tool(base('bad_tool', { scope: 'tasks:delete' as never }))
  async bad() {
    return [];
  }
}

async function boot(...providers: unknown[]) {
  @Module({ imports: [DiscoveryModule], providers: [ToolRegistry, ToolExplorer, ToolsService, ...(providers as never[])] })
  class Harness {}
  const ref = await Test.createTestingModule({ imports: [Harness] }).compile();
  await ref.init();
  return ref;
}

const actor: Actor = { userId: 'u-1', projectIds: null, repos: null };

describe('tool registry', () => {
  it('discovers @Tool methods, orders catalog tools first, validates and dispatches', async () => {
    const ref = await boot(NumbersProvider);
    const tools = ref.get(ToolsService);
    expect(tools.toolsFor(['tasks:read']).map((t) => t.definition.name)).toEqual(['get_task', 'zzz_numbers']);
    expect(tools.toolsFor(['docs:read'])).toEqual([]);
    expect(await tools.call('zzz_numbers', { limit: '3' }, actor, ['tasks:read'])).toEqual({ result: [1, 2, 3], truncated: true });
    expect(await tools.call('get_task', undefined, actor, ['tasks:read'])).toEqual({ result: { user: 'u-1' }, truncated: false });
    await expect(tools.call('zzz_numbers', {}, actor, ['tasks:write'])).rejects.toMatchObject({ code: 'insufficient_scope' });
    await expect(tools.call('nope', {}, actor, ['tasks:read'])).rejects.toMatchObject({ code: 'unknown_tool' });
    const view = tools.schemaView(tools.require('zzz_numbers'));
    expect(view.outputSchema).toEqual({ type: 'object', properties: { items: { type: 'array', items: { type: 'integer' } } }, required: ['items'] });
    expect(Object.isFrozen(tools.require('zzz_numbers').definition)).toBe(true);
    await ref.close();
  });

  it('fails start-up on a duplicate tool name', async () => {
    await expect(boot(NumbersProvider, DuplicateProvider)).rejects.toThrow(ToolDefinitionError);
    await expect(boot(NumbersProvider, DuplicateProvider)).rejects.toThrow(/defined twice/);
  });

  it('fails start-up on an invalid definition', async () => {
    await expect(boot(BadProvider)).rejects.toThrow(/scope "tasks:delete" is not a known scope/);
  });
});
