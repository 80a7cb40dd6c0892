import { Injectable } from '@nestjs/common';
import type { Caller } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { toAppException } from '../../common/errors/to-app-exception.js';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import { redactJsonText, redactValue } from '../../common/secrets/secret-redactor.js';
import { auditActorOf, newAuditEntry, type AuditEntry } from '../audit/audit-entry.js';
import { AuditService } from '../audit/audit.service.js';
import { CredentialRegistry } from '../credentials/credential-registry.js';
import { isWriteTool, ToolList, type RegisteredTool } from '../tool-kit/tool-definition.js';
import { auditedArguments, validateArguments } from '../tool-kit/tool-parameters.js';
import { ToolRegistry } from '../tool-kit/tool-registry.js';
import { assertToolAllowed, restrictableTool, withPinnedArguments } from '../tool-kit/tool-restriction.js';
import { countRefusedToolCall, observeToolCall, type ToolDoor } from './tool-call-telemetry.js';

/** A validated call, ready to run: lets a caller (e.g. the idempotency layer) see normalised arguments first. */
export interface PreparedToolCall {
  tool: RegisteredTool;
  args: Record<string, unknown>;
}

export interface ToolCallOutcome {
  result: unknown;
  /** A list result stopped at its limit (Area A answers `X-Truncated: true`). */
  truncated: boolean;
  /**
   * The result as JSON text, when the tool had it written (`ToolList.fromJson`): the JSON door answers this text
   * as it is. `result` is then parsed from it on first read, so a door that needs the value still gets it.
   */
  resultJson?: string;
}

/** The name a call asked for and the registry tool it names (undefined: none), as the resolve step found it. */
export interface ResolvedTool {
  name: string;
  tool: RegisteredTool | undefined;
}

/**
 * How the limit step came out for a request: a door that spends the caller's budget once per request, whatever the
 * request carries (every POST of the MCP door), runs `limit` before it knows there is a tool call and hands the
 * outcome over; the pipeline then spends nothing more.
 */
export interface LimitOutcome {
  refused?: AppException;
}

/**
 * The confirmation step as a door can ask the user: confirmed, cannot ask (the pipeline then refuses with
 * confirmation_required), or an answer of the door's own that ends the call for now (a 2026-07-28 `input_required`).
 */
export type ConfirmationStep<A> = 'confirmed' | 'cannot-ask' | { answer: A };

/** One call, as a door hands it to the pipeline once it has translated its wire format. */
export interface ToolCallRequest<A = never> {
  door: ToolDoor;
  /** Authenticated by its credential kind (CredentialRegistry) before the call reaches the pipeline. */
  caller: Caller;
  /** The tool's name, or what `resolve` found for it when the door had to look first (to choose its path). */
  tool: string | ResolvedTool;
  args: Record<string, unknown> | undefined;
  /** Write tools: a repeat within 24 h answers the first result. */
  idempotencyKey?: string;
  /** The limit step's outcome when the door ran it for the whole request; otherwise the pipeline runs it. */
  limited?: LimitOutcome;
  /** Asks the user to confirm a write of a "confirm writes" credential; a door that cannot ask leaves it out. */
  confirm?: (prepared: PreparedToolCall) => Promise<ConfirmationStep<A>>;
  /** Told when the tool starts and finishes (MCP progress notifications). */
  progress?: (progress: number, message: string) => Promise<void>;
  /** Bounds the invoke step (the agent loop's step timeout); its own failures are named by `statusOfError`. */
  within?: <T>(work: Promise<T>) => Promise<T>;
  /** A door whose failures are not Area A errors (an agent step's timeout) names their telemetry status. */
  statusOfError?: (error: unknown) => string | undefined;
}

/** How a call ended: the tool ran (or its first run was replayed), or the door's confirmation answered for now. */
export type ToolCallResult<A = never> =
  | { kind: 'ran'; outcome: ToolCallOutcome; replayed: boolean; tool: RegisteredTool }
  | ([A] extends [never] ? never : { kind: 'answered'; answer: A });

/**
 * The one way a tool is called, from the JSON door, the MCP door (its SDK servers and its fast path) and the agent
 * loop: authenticate (the credential kind, before) → limit → resolve → authorise (scope) → validate → confirm →
 * idempotency → invoke → record. Each step is a named method that runs once per call; doors only translate their
 * wire format in and out, so a rule added to a step holds on every door.
 */
@Injectable()
export class ToolCallPipeline {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly credentials: CredentialRegistry,
    private readonly idempotency: IdempotencyService,
    private readonly audit: AuditService,
  ) {}

  /**
   * Limit: spends one call of the caller's budget, as its kind says (none for a kind without one, like an agent run,
   * whose caps hold when it is queued). A spent budget is returned, not thrown: the MCP door answers it in-band.
   */
  async limit(caller: Caller): Promise<LimitOutcome> {
    try {
      await this.credentials.spend(caller);
      return {};
    } catch (error) {
      if (!(error instanceof AppException)) throw error;
      return { refused: error };
    }
  }

  /** Resolve: the registry tool a name stands for; the 404 is raised in its turn by `run`. */
  resolve(name: string): ResolvedTool {
    return { name, tool: this.registry.get(name) };
  }

  /**
   * Authorise: whether this caller may call this tool. Deny by default: 403 insufficient_scope unless the tool's
   * scope is on the credential, then 403 tool_not_allowed unless its restriction allows it (tool-restriction.ts).
   */
  authorise(caller: Caller, tool: RegisteredTool): void {
    if (!caller.scopes.includes(tool.definition.scope)) {
      throw new AppException(
        ErrorCode.InsufficientScope,
        `This key lacks the "${tool.definition.scope}" scope that ${tool.definition.name} needs`,
        { required_scope: tool.definition.scope },
      );
    }
    // 403 tool_not_allowed outside the credential's tools allowlist or read-only choice, or the request's toolsets.
    if (caller.restriction) assertToolAllowed(restrictableTool(tool), caller.restriction);
  }

  /**
   * Validate: the arguments against the tool's one parameter definition (400 invalid_argument), normalised, with
   * what the caller's single project or repository pin fills in.
   */
  validate(caller: Caller, tool: RegisteredTool, args: Record<string, unknown> | undefined): PreparedToolCall {
    const { parameters } = tool.definition;
    const pinned = withPinnedArguments(parameters, args ?? {}, caller.actor, isWriteTool(tool));
    return { tool, args: validateArguments(parameters, pinned) };
  }

  /** Whether the confirm step must ask: a write tool of a credential created with `confirmWrites`. */
  needsConfirmation(caller: Caller, tool: RegisteredTool): boolean {
    return caller.confirmWrites && isWriteTool(tool);
  }

  /** Resolve, authorise and validate without running anything (an owner's edited arguments when approving a step). */
  vet(caller: Caller, name: string, args: Record<string, unknown> | undefined): PreparedToolCall {
    return this.validate(caller, this.authorised(caller, this.resolve(name)), args);
  }

  /** Runs one call through every step, counted and traced as its door's (tool-call-telemetry.ts). */
  run<A = never>(request: ToolCallRequest<A>): Promise<ToolCallResult<A>> {
    const resolved = typeof request.tool === 'string' ? this.resolve(request.tool) : request.tool;
    return observeToolCall<ToolCallResult<A>>(
      {
        door: request.door,
        tool: resolved.tool,
        statusOfResult: (result) => (result.kind === 'ran' ? 'ok' : 'input_required'),
        statusOfError: request.statusOfError,
      },
      () => this.steps(request, resolved),
    );
  }

  /**
   * A call its door refused before handing it over (a malformed body): counted as the door's, and on the audit log
   * under the name it gave, when it gave one.
   */
  refuse(door: ToolDoor, caller: Caller, name: unknown, error: unknown): void {
    const tool = typeof name === 'string' ? this.registry.get(name) : undefined;
    countRefusedToolCall(door, tool, error);
    if (typeof name === 'string') this.recordRefused(caller, name, error);
  }

  private async steps<A>(request: ToolCallRequest<A>, resolved: ResolvedTool): Promise<ToolCallResult<A>> {
    const { caller } = request;
    const limited = request.limited ?? (await this.limit(caller));
    if (limited.refused) throw limited.refused;
    let prepared: PreparedToolCall;
    try {
      prepared = this.validate(caller, this.authorised(caller, resolved), request.args);
      if (this.needsConfirmation(caller, prepared.tool)) {
        const step = request.confirm ? await request.confirm(prepared) : 'cannot-ask';
        if (typeof step === 'object') return { kind: 'answered', answer: step.answer } as ToolCallResult<A>;
        if (step !== 'confirmed') throw confirmationRequired(prepared);
      }
    } catch (error) {
      this.recordRefused(caller, resolved.name, error);
      throw error;
    }
    await request.progress?.(0, `Running ${resolved.name}`);
    const invoke = () => this.invoke(prepared, caller, request.within);
    let ran: { value: ToolCallOutcome; replayed: boolean };
    if (request.idempotencyKey === undefined || !isWriteTool(prepared.tool)) {
      ran = { value: await invoke(), replayed: false };
    } else {
      // The key space is the credential's, shared by both doors: a replay returns the first result as it is, so a key
      // pinned to one project must never replay what another credential of the same user was allowed to see.
      ran = await this.idempotency.run(
        {
          ownerId: caller.userId,
          scope: `tool-api:call:${caller.credentialId ?? caller.budgetKey}`,
          key: request.idempotencyKey,
          request: { name: prepared.tool.definition.name, arguments: prepared.args },
        },
        invoke,
      );
      if (ran.replayed) this.recordReplay(prepared, caller);
    }
    await request.progress?.(1, `${resolved.name} finished`);
    return { kind: 'ran', outcome: ran.value, replayed: ran.replayed, tool: prepared.tool };
  }

  private authorised(caller: Caller, resolved: ResolvedTool): RegisteredTool {
    if (!resolved.tool)
      throw new AppException(ErrorCode.UnknownTool, `No tool named "${resolved.name}"`, { name: resolved.name });
    this.authorise(caller, resolved.tool);
    return resolved.tool;
  }

  /**
   * Invoke and record: the tool runs with its tool.call audit entry pending (AuditService.runToolCall), naming the
   * caller handed in; a write commits the entry with its change, anything else is written behind the answer. Credential
   * shapes in results are redacted here, once for every door.
   */
  private async invoke(
    prepared: PreparedToolCall,
    caller: Caller,
    within: ToolCallRequest['within'],
  ): Promise<ToolCallOutcome> {
    const entry = this.entry(caller, prepared.tool.definition.name, prepared);
    const running = this.audit.runToolCall(entry, () => prepared.tool.handler(prepared.args, caller.actor));
    const value = await (within ? within(running) : running);
    if (value instanceof ToolList)
      return listOutcome(
        (value as ToolList<unknown>).redacted(
          (json) => redactJsonText(json, 'tool_result'),
          (items) => redactValue(items, 'tool_result'),
        ),
      );
    return { result: redactValue(value, 'tool_result'), truncated: false };
  }

  /**
   * Record a refusal (unknown tool, missing scope, bad arguments, a write awaiting confirmation): the tool name only
   * (arguments that failed validation are untrusted input of any size and shape, and may be exactly what a parameter
   * marked `audit: 'omit'` keeps out).
   */
  private recordRefused(caller: Caller, name: string, error: unknown): void {
    this.audit.recordBehind({
      ...this.entry(caller, name),
      outcome: { status: 'error', code: toAppException(error)?.code ?? 'internal' },
    });
  }

  /** Record a write answered from its Idempotency-Key record (nothing ran, nothing changed) as a replay. */
  private recordReplay(prepared: PreparedToolCall, caller: Caller): void {
    const entry = this.entry(caller, prepared.tool.definition.name, prepared);
    this.audit.recordBehind({ ...entry, details: { ...entry.details, replayed: true } });
  }

  private entry(caller: Caller, name: string, prepared?: PreparedToolCall): AuditEntry {
    return newAuditEntry({
      action: 'tool.call',
      actor: auditActorOf(caller),
      target: null,
      outcome: { status: 'ok' },
      details: prepared
        ? { tool: name, arguments: auditedArguments(prepared.tool.definition.parameters, prepared.args) }
        : { tool: name.slice(0, 64) },
    });
  }
}

function confirmationRequired(prepared: PreparedToolCall): AppException {
  return new AppException(
    ErrorCode.ConfirmationRequired,
    `${prepared.tool.definition.name} writes, and this credential asks the user to confirm every write: call it over MCP from a client that declared elicitation (revision 2026-07-28, or 2025-06-18/2025-11-25 with the session the server then issues)`,
  );
}

function listOutcome(list: ToolList): ToolCallOutcome {
  if (list.json === undefined) return { result: list.items, truncated: list.truncated };
  return new WrittenListOutcome(list);
}

/**
 * A list the tool had written as JSON text, parsed only if a door reads `result`. A class rather than an object
 * literal with a getter: a per-call closure kept each list's text alive through young collections until the next full
 * one (docs/perf/gateway.md, "the collector").
 */
class WrittenListOutcome implements ToolCallOutcome {
  readonly truncated: boolean;
  readonly resultJson: string;

  constructor(private readonly list: ToolList) {
    this.truncated = list.truncated;
    this.resultJson = list.json!;
  }

  get result(): unknown {
    return this.list.items;
  }
}
