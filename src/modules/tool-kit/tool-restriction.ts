import type { Actor } from '../../common/auth/actor.js';
import type { ToolRestriction } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { isWriteTool, type RegisteredTool } from './tool-definition.js';
import type { ToolParameters } from './tool-parameters.js';

/** What the restriction rule looks at in a tool, registry tool or extension tool alike. */
export interface RestrictableTool {
  name: string;
  readOnly: boolean;
  /** Its provider's toolset; null for a tool outside every toolset (an MCP extension's). */
  toolset: string | null;
}

/** How a toolset is spelled in `@ToolProvider({toolset})`, the X-MCP-Toolsets header and the /x/{toolset} URL. */
export const TOOLSET_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/** At most this many names in a credential's tools allowlist (the registry holds far fewer tools). */
export const MAX_ALLOWED_TOOLS = 200;

/** Why a restriction refuses a tool, or null when it allows it. */
export function refusalOf(tool: RestrictableTool, restriction: ToolRestriction | undefined): string | null {
  if (!restriction) return null;
  if (restriction.tools !== null && !restriction.tools.includes(tool.name))
    return `it is not among the tools this credential may use (${restriction.tools.join(', ') || 'none'})`;
  if (restriction.readOnly && !tool.readOnly) return 'it writes, and this credential or request is read-only';
  if (!toolsetAllowed(tool.toolset, restriction))
    return `this request is narrowed to the toolsets ${restriction.toolsets?.join(', ') || '(none)'}`;
  return null;
}

/**
 * Whether what belongs to this toolset (a tool, or an MCP extension's resources and completions) is inside the
 * request's toolsets; something in no toolset only when the request names none.
 */
export function toolsetAllowed(toolset: string | null, restriction: ToolRestriction | undefined): boolean {
  if (!restriction || restriction.toolsets === null) return true;
  return toolset !== null && restriction.toolsets.includes(toolset);
}

/**
 * The one rule "may this caller use this tool", beside the scope check: inside the credential's tools allowlist,
 * read-only when the credential or the request says so, inside the request's toolsets.
 */
export function toolAllowed(tool: RestrictableTool, restriction: ToolRestriction | undefined): boolean {
  return refusalOf(tool, restriction) === null;
}

/** 403 tool_not_allowed for a tool the restriction refuses; nothing for one it allows. */
export function assertToolAllowed(tool: RestrictableTool, restriction: ToolRestriction | undefined): void {
  const why = refusalOf(tool, restriction);
  if (why === null) return;
  throw new AppException(ErrorCode.ToolNotAllowed, `${tool.name} is not allowed here: ${why}`, { tool: tool.name });
}

/** The narrower of a credential's restriction and a request's narrowing: lists intersect, read-only sticks. */
export function narrowRestriction(
  base: ToolRestriction | undefined,
  narrowing: { toolsets: readonly string[] | null; readOnly: boolean },
): ToolRestriction | undefined {
  if (narrowing.toolsets === null && !narrowing.readOnly) return base;
  const toolsets =
    narrowing.toolsets === null
      ? (base?.toolsets ?? null)
      : base?.toolsets
        ? base.toolsets.filter((name) => narrowing.toolsets!.includes(name))
        : narrowing.toolsets;
  return Object.freeze({
    tools: base?.tools ?? null,
    readOnly: (base?.readOnly ?? false) || narrowing.readOnly,
    toolsets: toolsets && Object.freeze([...toolsets]),
  });
}

/** A credential's stored choice as a restriction; undefined when it narrows nothing. */
export function credentialRestriction(stored: {
  tools: readonly string[] | null;
  readOnly: boolean;
}): ToolRestriction | undefined {
  if (stored.tools === null && !stored.readOnly) return undefined;
  return Object.freeze({
    tools: stored.tools && Object.freeze([...stored.tools]),
    readOnly: stored.readOnly,
    toolsets: null,
  });
}

/** Text that differs exactly when two restrictions allow different tools (a cache key part). */
export function restrictionKey(restriction: ToolRestriction | undefined): string {
  if (!restriction) return '';
  return `${restriction.tools?.join(',') ?? '*'}|${restriction.readOnly ? 'ro' : 'rw'}|${restriction.toolsets?.join(',') ?? '*'}`;
}

const TOOLSETS_HEADER = 'x-mcp-toolsets';
const READONLY_HEADER = 'x-mcp-readonly';
/** `/api/v1/public/mcp/readonly`, `/api/v1/public/mcp/x/{toolset}` and `…/x/{toolset}/readonly`. */
const NARROWED_PATH = /^\/api\/v1\/public\/mcp(?:\/x\/([^/]+))?(\/readonly)?\/?$/;

/**
 * What a request narrows its credential's tools to (API.md, "Grants and admin policy"): the X-MCP-Toolsets and
 * X-MCP-Readonly headers and the toolset URLs. An unknown toolset or a malformed header is 400 invalid_argument.
 */
export function requestNarrowing(
  path: string,
  headers: Record<string, string | string[] | undefined>,
  knownToolsets: readonly string[],
): { toolsets: readonly string[] | null; readOnly: boolean } {
  let toolsets: string[] | null = null;
  let readOnly = false;
  const match = NARROWED_PATH.exec(path);
  if (match?.[1] !== undefined) toolsets = [knownToolset(decodeSegment(match[1]), knownToolsets, 'the URL')];
  if (match?.[2] !== undefined) readOnly = true;
  const header = headers[TOOLSETS_HEADER];
  if (header !== undefined) {
    const names = (Array.isArray(header) ? header.join(',') : header)
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== '');
    if (names.length === 0 || names.length > 64)
      throw new AppException(ErrorCode.InvalidArgument, `X-MCP-Toolsets names toolsets: ${knownToolsets.join(', ')}`, {
        argument: 'X-MCP-Toolsets',
      });
    const named = names.map((name) => knownToolset(name, knownToolsets, 'X-MCP-Toolsets'));
    toolsets = toolsets === null ? [...new Set(named)] : toolsets.filter((name) => named.includes(name));
  }
  const readonlyHeader = headers[READONLY_HEADER];
  if (readonlyHeader !== undefined) {
    const value = (Array.isArray(readonlyHeader) ? readonlyHeader.join(',') : readonlyHeader).trim().toLowerCase();
    if (value !== 'true' && value !== 'false')
      throw new AppException(ErrorCode.InvalidArgument, 'X-MCP-Readonly must be true or false', {
        argument: 'X-MCP-Readonly',
      });
    // Narrowing only: `false` never widens what the credential or the URL made read-only.
    readOnly ||= value === 'true';
  }
  return { toolsets, readOnly };
}

function knownToolset(name: string, known: readonly string[], where: string): string {
  if (known.includes(name)) return name;
  throw new AppException(
    ErrorCode.InvalidArgument,
    `Unknown toolset "${name.slice(0, 64)}" in ${where}; the toolsets are: ${known.join(', ')}`,
    { argument: where === 'the URL' ? 'toolset' : where, toolset: name.slice(0, 64) },
  );
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment).toLowerCase();
  } catch {
    return segment.toLowerCase();
  }
}

/** The parameters a caller pinned to exactly one project (or repository) never sends: Atrium fills them in. */
export const PINNABLE_PARAMETERS = ['project_id', 'repo'] as const;
export type PinnableParameter = (typeof PINNABLE_PARAMETERS)[number];

/** The values a caller's single pins fill in (`project_id` for one project, `repo` for one repository). */
export function pinnedArguments(
  actor: Pick<Actor, 'projectIds' | 'repos'> | undefined,
): Partial<Record<PinnableParameter, string>> {
  const pinned: Partial<Record<PinnableParameter, string>> = {};
  if (actor?.projectIds?.length === 1) pinned.project_id = actor.projectIds[0];
  if (actor?.repos?.length === 1) pinned.repo = actor.repos[0];
  return pinned;
}

/** A registry tool as the restriction rule sees it. */
export function restrictableTool(tool: RegisteredTool): RestrictableTool {
  return { name: tool.definition.name, readOnly: !isWriteTool(tool), toolset: tool.toolset };
}

/** The parameters of a tool a caller with these pins sees: without the ones its single pins fill in. */
export function unpinnedParameters(
  parameters: ToolParameters,
  actor: Pick<Actor, 'projectIds' | 'repos'> | undefined,
): ToolParameters {
  const pinned = Object.keys(pinnedArguments(actor)).filter((name) => name in parameters);
  if (pinned.length === 0) return parameters;
  return Object.fromEntries(Object.entries(parameters).filter(([name]) => !pinned.includes(name)));
}

/**
 * The arguments with what the caller's single pins fill in where the parameter exists and was not sent: a required one
 * (`repo`), or any of a write tool (the project a created object lands in). An optional filter of a read tool is left
 * out: the pin already narrows its answer to that project, and a filter would add checks the pin does not make.
 */
export function withPinnedArguments(
  parameters: ToolParameters,
  args: Record<string, unknown>,
  actor: Pick<Actor, 'projectIds' | 'repos'> | undefined,
  writes: boolean,
): Record<string, unknown> {
  let filled = args;
  for (const [name, value] of Object.entries(pinnedArguments(actor))) {
    if (!(name in parameters) || Object.hasOwn(args, name)) continue;
    if (!writes && !parameters[name].required) continue;
    filled = { ...filled, [name]: value };
  }
  return filled;
}

/** Text that differs exactly when two callers' pins drop different parameters (a cache key part). */
export function pinsKey(actor: Pick<Actor, 'projectIds' | 'repos'> | undefined): string {
  return Object.keys(pinnedArguments(actor)).join(',');
}

/**
 * A credential's tools allowlist as stored: each name a registered tool whose scope the credential carries, once, in
 * the order given; null when none was chosen. 400 naming the unknown tools, or those outside the scopes.
 */
export function checkedAllowlist(
  tools: readonly string[] | null | undefined,
  scopes: readonly string[],
  find: (name: string) => RegisteredTool | undefined,
): string[] | null {
  // Null is JSON's absent value, as the validators treat it: no allowlist, not an empty one.
  if (tools === undefined || tools === null) return null;
  const names = [...new Set(tools)];
  const unknown = names.filter((name) => find(name) === undefined);
  if (unknown.length > 0) {
    const message = `tools names unknown tools: ${unknown.map((name) => name.slice(0, 64)).join(', ')}`;
    throw AppException.validation(message, [{ field: 'tools', message }]);
  }
  const outside = names.filter((name) => !scopes.includes(find(name)!.definition.scope));
  if (outside.length > 0) {
    const message = `tools must be within the scopes; outside them: ${outside.map((name) => `${name} (needs ${find(name)!.definition.scope})`).join(', ')}`;
    throw AppException.validation(message, [{ field: 'tools', message }]);
  }
  return names;
}
