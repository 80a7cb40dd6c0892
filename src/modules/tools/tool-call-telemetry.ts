import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import { toAppException } from '../../common/errors/to-app-exception.js';
import { ERROR_CODE_MAPPING, ErrorCode } from '../../common/errors/error-code.js';
import { UNKNOWN_TOOL, toolCallDuration, toolCallsTotal } from '../../common/metrics/metrics.registry.js';
import { atriumTracer } from '../../common/tracing/tracing-state.js';
import type { RegisteredTool } from '../tool-kit/tool-definition.js';

const INTERNAL = ERROR_CODE_MAPPING[ErrorCode.Internal].toolApiCode;

/** Where a tool call came in: the Area A JSON door, the MCP door, or an agent run's tool loop. */
export type ToolDoor = 'json' | 'mcp' | 'agent';

export interface ToolCallObservation<T> {
  door: ToolDoor;
  /** The registered tool the caller named (`ToolsService.find`), or undefined: the label is then `unknown`, never the name sent. */
  tool: RegisteredTool | undefined;
  /** A door that answers failures as results (MCP `isError`) says which outcome a result is; default `ok`. */
  statusOfResult?: (value: T) => string;
  /** A door with failures of its own (an agent step's timeout) names them; default: the Area A error code. */
  statusOfError?: (error: unknown) => string | undefined;
}

/**
 * One tool call, seen from a door: counts it in atrium_tool_calls_total{tool,status,door} and its duration, and
 * with tracing on runs it inside a span `tool <name>` (attributes atrium.tool.name, .door, .status), so the SQL the
 * call runs nests under it. Status is `ok` or the Area A error code (`invalid_argument`, `not_found`, …, `internal`):
 * a bounded set, like the tool names.
 */
export async function observeToolCall<T>(observation: ToolCallObservation<T>, run: () => Promise<T>): Promise<T> {
  const tool = observation.tool?.definition.name ?? UNKNOWN_TOOL;
  const tracer = atriumTracer();
  if (!tracer) return measured(observation, tool, run, undefined);
  return tracer.startActiveSpan(
    `tool ${tool}`,
    { attributes: { 'atrium.tool.name': tool, 'atrium.tool.door': observation.door } },
    (span) => measured(observation, tool, run, span).finally(() => span.end()),
  );
}

async function measured<T>(
  observation: ToolCallObservation<T>,
  tool: string,
  run: () => Promise<T>,
  span: Span | undefined,
): Promise<T> {
  const started = performance.now();
  let status = INTERNAL;
  try {
    const value = await run();
    status = observation.statusOfResult?.(value) ?? 'ok';
    return value;
  } catch (error) {
    status = observation.statusOfError?.(error) ?? errorStatus(error, observation.tool);
    throw error;
  } finally {
    toolCallsTotal.inc({ tool, status, door: observation.door });
    toolCallDuration.observe({ tool, door: observation.door }, (performance.now() - started) / 1000);
    span?.setAttribute('atrium.tool.status', status);
    if (status !== 'ok') span?.setStatus({ code: SpanStatusCode.ERROR, message: status });
  }
}

/** A call a door refused before handing it to the pipeline (the JSON door: a body that is not a call). */
export function countRefusedToolCall(door: ToolDoor, tool: RegisteredTool | undefined, error: unknown): void {
  toolCallsTotal.inc({ tool: tool?.definition.name ?? UNKNOWN_TOOL, status: errorStatus(error, tool), door });
}

function errorStatus(error: unknown, tool: RegisteredTool | undefined): string {
  const exception = toAppException(error);
  if (exception) return ERROR_CODE_MAPPING[exception.code].toolApiCode;
  // The MCP door refuses an unknown name as a JSON-RPC protocol error, not an AppException.
  return tool ? INTERNAL : ERROR_CODE_MAPPING[ErrorCode.UnknownTool].toolApiCode;
}
