import { Injectable } from '@nestjs/common';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import type { KeyCaller } from '../api-keys/owner.interceptor.js';
import { ToolsService, type PreparedToolCall, type ToolCallOutcome } from './tools.service.js';

/** What both Area A doors (JSON and MCP) do with a prepared call for an API key. */
@Injectable()
export class KeyToolCalls {
  constructor(
    private readonly tools: ToolsService,
    private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * A call through an Area A door (JSON or MCP) for an API key. A write tool with an Idempotency-Key runs
   * once: a repeat answers the first result (`replayed`). The key space is the API key's, shared by both
   * doors, not the user's: a replay returns that first result as it is, so a key pinned to one project
   * must never replay what another key of the same user was allowed to create or read.
   */
  async invoke(prepared: PreparedToolCall, caller: KeyCaller, idempotencyKey: string | undefined): Promise<ToolCallOutcome & { replayed: boolean }> {
    if (idempotencyKey === undefined || prepared.tool.definition.annotations.readOnlyHint) {
      return { ...(await this.tools.invoke(prepared, caller.actor)), replayed: false };
    }
    const { value, replayed } = await this.idempotency.run(
      {
        ownerId: caller.actor.userId,
        scope: `tool-api:call:${caller.keyId}`,
        key: idempotencyKey,
        request: { name: prepared.tool.definition.name, arguments: prepared.args },
      },
      () => this.tools.invoke(prepared, caller.actor),
    );
    return { ...value, replayed };
  }
}
