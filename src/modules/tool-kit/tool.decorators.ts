import { SetMetadata } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { ScopeDeclaration } from './scope-catalog.js';
import type { ToolDefinition, TypedToolHandler } from './tool-definition.js';
import type { ToolArgs, ToolParameters } from './tool-parameters.js';

/** What a provider says about itself; everything outside its module is derived from this and its `@Tool`s. */
export interface ToolProviderOptions {
  /**
   * Where its tools go in listings (Area A and MCP tools/list): by position, then in the order the methods
   * are declared. A fraction slots one provider's tools between another's (RAG's search_documents sits
   * between get_document at 201 and create_document at 202). Providers without one come last, by tool name.
   */
  position?: number;
  /**
   * The toolset its tools belong to (`tasks`, `docs`, `github`, …; lowercase, a-z, 0-9, -): what a request narrows
   * to with X-MCP-Toolsets or /api/v1/public/mcp/x/{toolset}. Required of a provider with tools; several providers
   * may share one.
   */
  toolset?: string;
  /** One or two sentences for the MCP `instructions`, sent when the caller may use at least one of its tools. */
  instructions?: string;
  /** The scopes this provider introduces, in the order the account page lists them. A scope is declared once, by one provider; others may use it. */
  scopes?: readonly ScopeDeclaration[];
}

/** Marks a provider class whose methods carry `@Tool`; the explorer finds it at start-up. */
export const ToolProvider = DiscoveryService.createDecorator<ToolProviderOptions | undefined>();

export const TOOL_METADATA = 'atrium:tool';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/**
 * The handler's first parameter must be exactly `ToolArgs<P>` of the definition's parameters: a wider
 * `Record<string, unknown>` or a hand-written shape that drifts from the definition fails to compile.
 */
type HandlerCheck<P extends ToolParameters, M> = M extends (...params: infer Params) => unknown
  ? Params extends []
    ? unknown // ignores its arguments
    : Same<Params[0], ToolArgs<P>> extends true
      ? unknown
      : { 'the handler must take args: ToolArgs<typeof its parameters>': ToolArgs<P> }
  : unknown;

/**
 * Registers the decorated method as a tool handler: `(args: ToolArgs<P>, actor) => result`. Declare the
 * parameters in a const so the handler can name their type: see docs/adding-a-tool.md.
 */
export function Tool<const P extends ToolParameters>(definition: ToolDefinition<P>) {
  return <M extends TypedToolHandler<P>>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<M> & HandlerCheck<P, M>,
  ): void => {
    SetMetadata(TOOL_METADATA, definition)(target, key, descriptor);
  };
}
