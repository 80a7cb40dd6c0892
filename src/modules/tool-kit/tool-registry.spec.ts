import { Injectable, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { Actor } from '../../common/auth/actor.js';
import { ScopeCatalog } from './scope-catalog.js';
import { ToolDefinitionError, ToolList, type ToolDefinition } from './tool-definition.js';
import { param, type ToolArgs, type ToolParameters } from './tool-parameters.js';
import { Tool, ToolProvider } from './tool.decorators.js';
import { ToolExplorer } from './tool.explorer.js';
import { ToolRegistry } from './tool-registry.js';
import { ToolsService } from '../tools/tools.service.js';
import { ToolCallPipeline } from '../tools/tool-call-pipeline.js';
import { CredentialRegistry } from '../credentials/credential-registry.js';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import type { Caller } from '../../common/auth/caller.js';
import type { AuditEntry } from '../audit/audit-entry.js';
import { AuditLogRepository } from '../audit/audit-log.repository.js';
import { AuditRecorder } from '../audit/audit.recorder.js';
import { AuditService } from '../audit/audit.service.js';
import { CredentialEvents } from '../credentials/credential-events.js';

/** The audit log of the harness: the real AuditService and recorder over a repository that keeps rows in memory. */
const audited: AuditEntry[] = [];
const memoryAuditLog = {
  provide: AuditLogRepository,
  useValue: { insert: async (entries: readonly AuditEntry[]) => void audited.push(...entries) },
};

const LIMIT = { limit: param.int({ description: 'limit', default: 2, minimum: 1, maximum: 5 }) };

const base = <P extends ToolParameters = typeof LIMIT>(
  name: string,
  extra: Partial<ToolDefinition<P>> = {},
): ToolDefinition<P> => ({
  name,
  title: name,
  description: `The ${name} tool`,
  scope: 'numbers:read',
  parameters: LIMIT as unknown as P,
  annotations: { readOnlyHint: true },
  output: { type: 'array', items: { type: 'integer' } },
  ...extra,
});

const NUMBER_SCOPES = ['read', 'write'].map((access) => ({
  name: `numbers:${access}`,
  group: 'Numbers',
  allows: `${access === 'read' ? 'Read' : 'Write'} numbers`,
}));

@ToolProvider({ position: 10, toolset: 'numbers', instructions: 'Numbers count.', scopes: NUMBER_SCOPES })
@Injectable()
class NumbersProvider {
  // Declared first: listed first (position 10), although its name sorts last.
  @Tool(base('zzz_numbers'))
  async numbers(args: ToolArgs<typeof LIMIT>, actor: Actor) {
    return ToolList.fromRows(
      [1, 2, 3, 4, 5, 6].map((n) => n + actor.userId.length * 0),
      args.limit,
    );
  }

  @Tool(base('aaa_whoami', { parameters: {}, output: { type: 'object' } }))
  async whoami(_args: Record<string, never>, actor: Actor) {
    return { user: actor.userId };
  }
}

/** No position: after every positioned tool, by name; its instructions only for callers that see its tools. */
@ToolProvider({
  toolset: 'letters',
  instructions: 'Letters spell.',
  scopes: [{ name: 'letters:read', group: 'Letters', allows: 'Read letters' }],
})
@Injectable()
class LettersProvider {
  @Tool(base('bbb_letters', { scope: 'letters:read' }))
  async letters() {
    return ['a'];
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
class UndeclaredScopeProvider {
  @Tool(base('bad_tool', { scope: 'tasks:delete' }))
  async bad() {
    return [];
  }
}

@ToolProvider({ scopes: [{ name: 'numbers:read', group: 'Again', allows: 'Read numbers again' }] })
@Injectable()
class RedeclaringProvider {}

async function boot(...providers: unknown[]) {
  @Module({
    imports: [DiscoveryModule],
    providers: [
      ToolRegistry,
      ToolExplorer,
      ToolsService,
      ToolCallPipeline,
      CredentialRegistry,
      { provide: IdempotencyService, useValue: {} },
      ScopeCatalog,
      memoryAuditLog,
      AuditRecorder,
      AuditService,
      CredentialEvents,
      ...(providers as never[]),
    ],
  })
  class Harness {}
  const ref = await Test.createTestingModule({ imports: [Harness] }).compile();
  await ref.init();
  return ref;
}

const actor: Actor = { userId: 'u-1', projectIds: null, repos: null };
/** A caller of a kind with no budget to spend (like an agent run), holding these scopes. */
const callerWith = (scopes: string[]): Caller => ({
  kind: 'test',
  via: 'agent_run',
  credentialId: null,
  userId: actor.userId,
  actor,
  scopes,
  confirmWrites: false,
  expiresAt: null,
  budgetKey: 'test',
});

describe('tool registry', () => {
  it('discovers @Tool methods, orders them by provider position then declaration, validates and dispatches', async () => {
    const ref = await boot(LettersProvider, NumbersProvider);
    const tools = ref.get(ToolsService);
    const pipeline = ref.get(ToolCallPipeline);
    ref.get(CredentialRegistry).register([{ name: 'test', via: 'agent_run', prefixes: [], doors: {} } as never]);
    const call = async (name: string, args: Record<string, unknown> | undefined, scopes: string[]) => {
      const ran = await pipeline.run({ door: 'agent', caller: callerWith(scopes), tool: name, args });
      return { ...ran.outcome };
    };
    expect(tools.toolsFor({ scopes: ['numbers:read', 'letters:read'] }).map((t) => t.definition.name)).toEqual([
      'zzz_numbers',
      'aaa_whoami',
      'bbb_letters',
    ]);
    expect(tools.toolsFor({ scopes: ['docs:read'] })).toEqual([]);
    expect(await call('zzz_numbers', { limit: '3' }, ['numbers:read'])).toEqual({
      result: [1, 2, 3],
      truncated: true,
    });
    expect(await call('aaa_whoami', undefined, ['numbers:read'])).toEqual({
      result: { user: 'u-1' },
      truncated: false,
    });
    await expect(call('zzz_numbers', {}, ['numbers:write'])).rejects.toMatchObject({
      code: 'insufficient_scope',
    });
    await expect(call('nope', {}, ['numbers:read'])).rejects.toMatchObject({ code: 'unknown_tool' });
    // Every dispatched call left its tool.call entry, and every refused one its error (written behind: flushed here).
    await ref.get(AuditService).flush();
    expect(
      audited.filter((e) => e.actor.userId === 'u-1').map((e) => [e.action, e.details.tool, e.outcome.status]),
    ).toEqual([
      ['tool.call', 'zzz_numbers', 'ok'],
      ['tool.call', 'aaa_whoami', 'ok'],
      ['tool.call', 'zzz_numbers', 'error'],
      ['tool.call', 'nope', 'error'],
    ]);
    const view = tools.schemaView(tools.find('zzz_numbers')!);
    expect(view.outputSchema).toEqual({
      type: 'object',
      properties: { items: { type: 'array', items: { type: 'integer' } } },
      required: ['items'],
    });
    expect(tools.inputSchemas().map((s) => [s.name, s.inputSchema])).toEqual([
      ['zzz_numbers', view.inputSchema],
      ['aaa_whoami', { type: 'object', properties: {}, additionalProperties: false }],
      ['bbb_letters', view.inputSchema],
    ]);
    expect(Object.isFrozen(tools.find('zzz_numbers')!.definition)).toBe(true);
    await ref.close();
  });

  it('builds the scope catalog and the MCP instructions from the providers', async () => {
    const ref = await boot(LettersProvider, NumbersProvider);
    const tools = ref.get(ToolsService);
    const scopes = ref.get(ScopeCatalog);
    // Catalog order follows provider position (unpositioned last), then declaration order.
    expect(scopes.list()).toEqual([
      { name: 'numbers:read', group: 'Numbers', allows: 'Read numbers', access: 'read', exampleTool: 'zzz_numbers' },
      { name: 'numbers:write', group: 'Numbers', allows: 'Write numbers', access: 'write', exampleTool: null },
      { name: 'letters:read', group: 'Letters', allows: 'Read letters', access: 'read', exampleTool: 'bbb_letters' },
    ]);
    expect(scopes.readNames()).toEqual(['numbers:read', 'letters:read']);
    expect(() => scopes.assertKnown(['numbers:read', 'tasks:read'])).toThrow(
      'each value in scopes must be one of: numbers:read, numbers:write, letters:read',
    );
    expect(tools.instructionsFor({ scopes: ['numbers:read'] })).toMatch(
      /within its scopes\. Numbers count\. Toolsets: numbers, letters; /,
    );
    expect(tools.instructionsFor({ scopes: ['numbers:read', 'letters:read'] })).toMatch(
      / Numbers count\. Letters spell\. Toolsets: /,
    );
    expect(tools.instructionsFor({ scopes: ['numbers:write'] })).toMatch(/within its scopes\. Toolsets: /);
    await ref.close();
  });

  it('fails start-up on a duplicate tool name', async () => {
    await expect(boot(NumbersProvider, DuplicateProvider)).rejects.toThrow(ToolDefinitionError);
    await expect(boot(NumbersProvider, DuplicateProvider)).rejects.toThrow(/defined twice/);
  });

  it('fails start-up on a scope no provider declares, or one declared twice', async () => {
    await expect(boot(NumbersProvider, UndeclaredScopeProvider)).rejects.toThrow(
      /scope "tasks:delete" is not a known scope/,
    );
    await expect(boot(NumbersProvider, RedeclaringProvider)).rejects.toThrow(
      /declared twice: NumbersProvider and RedeclaringProvider/,
    );
  });
});

// Compile-time: the handler's args must be exactly ToolArgs of its parameters (typecheck proves these lines).
const TYPED = {
  id: param.str({ description: 'id', required: true, format: 'uuid' }),
  state: param.str({ description: 'state', default: '', enum: ['open', 'closed'] }),
  due: param.date({ description: 'due', default: null, nullable: true }),
  title: param.str({ description: 'title', maxLength: 5 }),
  tags: param.strList({ description: 'tags', default: [] }),
};
export class TypedProviderForTypecheck {
  @Tool(base('typed_ok', { parameters: TYPED }))
  ok(args: {
    readonly id: string;
    readonly state: '' | 'open' | 'closed';
    readonly due: string | null;
    readonly tags: string[];
    readonly title?: string;
  }) {
    return args;
  }

  // @ts-expect-error a wide Record<string, unknown> is refused: the definition knows every type
  @Tool(base('typed_wide', { parameters: TYPED }))
  wide(args: Record<string, unknown>) {
    return args;
  }

  // @ts-expect-error a hand-written shape that drifts from the definition (limit is a number) is refused
  @Tool(base('typed_drift'))
  drift(args: { readonly limit: string }) {
    return args;
  }
}
