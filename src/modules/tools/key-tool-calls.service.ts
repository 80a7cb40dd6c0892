import { Injectable } from '@nestjs/common';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import type { KeyCaller } from '../api-keys/key-caller.js';
import { ToolsService, type PreparedToolCall, type ToolCallOutcome } from './tools.service.js';
import { isWriteTool } from '../tool-kit/tool-definition.js';

/** What both Area A doors (JSON and MCP) do with a prepared call for an API key. */
@Injectable()
export class KeyToolCallsService {
  constructor(
    private readonly tools: ToolsService,
    private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * The "confirm writes" rule (API.md, "Confirmation on the MCP door"), for both doors: a credential created
   * with `confirmWrites` runs a write tool (anything not `readOnlyHint: true`) only once the user confirmed it.
   * Only the MCP door can ask (elicitation); it passes `confirmed` after the user accepted.
   */
  /** The door's prepare (tool, scope and restriction, arguments): a refused call is on the audit log too. */
  prepare(name: string, args: Record<string, unknown> | undefined, caller: KeyCaller): PreparedToolCall {
    try {
      return this.tools.prepare(name, args, caller);
    } catch (error) {
      this.tools.recordRefused(name, caller.actor, error);
      throw error;
    }
  }

  needsConfirmation(prepared: PreparedToolCall, caller: KeyCaller): boolean {
    return caller.confirmWrites && isWriteTool(prepared.tool);
  }

  /**
   * A call through an Area A door (JSON or MCP) for an API key. A write tool of a "confirm writes"
   * credential is refused (403 confirmation_required) unless the door says the user confirmed it. A write tool with an Idempotency-Key runs
   * once: a repeat answers the first result (`replayed`). The key space is the API key's, shared by both
   * doors, not the user's: a replay returns that first result as it is, so a key pinned to one project
   * must never replay what another key of the same user was allowed to create or read.
   */
  async invoke(
    prepared: PreparedToolCall,
    caller: KeyCaller,
    idempotencyKey: string | undefined,
    options: { confirmed?: boolean } = {},
  ): Promise<ToolCallOutcome & { replayed: boolean }> {
    if (this.needsConfirmation(prepared, caller) && options.confirmed !== true) {
      const refused = confirmationRequired(prepared);
      this.tools.recordRefused(prepared.tool.definition.name, caller.actor, refused);
      throw refused;
    }
    if (idempotencyKey === undefined || !isWriteTool(prepared.tool)) {
      // Assigned rather than spread: a spread would read `result`, which parses a rendered list's JSON.
      return Object.assign(await this.tools.invoke(prepared, caller.actor), { replayed: false });
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
    if (replayed) this.tools.recordReplay(prepared, caller.actor);
    return { ...value, replayed };
  }
}

export function confirmationRequired(prepared: PreparedToolCall): AppException {
  return new AppException(
    ErrorCode.ConfirmationRequired,
    `${prepared.tool.definition.name} writes, and this credential asks the user to confirm every write: call it over MCP from a client that declared elicitation (revision 2026-07-28, or 2025-06-18/2025-11-25 with the session the server then issues)`,
  );
}
