import { Global, Injectable, Module } from '@nestjs/common';
import { AppException } from '../../common/errors/app.exception.js';

/** A scope a credential can carry, declared by the tool provider whose tools need it (`@ToolProvider({scopes})`). */
export interface ScopeDeclaration {
  /** `<area>:read` or `<area>:write`; a read scope admits read-only tools only, a write scope write tools only. */
  name: string;
  /** Heading the account page groups it under, e.g. "Tasks". */
  group: string;
  /** What a credential with it may do: one phrase, no final period. */
  allows: string;
}

/** What the account page reads (`GET /api/api-keys/scopes`). */
export interface ScopeView extends ScopeDeclaration {
  access: 'read' | 'write';
  /** A read-only tool of this scope that needs no argument (for the page's curl example); null when none. */
  exampleTool: string | null;
}

const SCOPE_NAME = /^[a-z][a-z0-9_-]{0,30}:(read|write)$/;

/** Problems with one provider's scope declarations (checked at start-up); empty when valid. */
export function scopeDeclarationProblems(declaration: Partial<ScopeDeclaration>): string[] {
  const problems: string[] = [];
  if (typeof declaration.name !== 'string' || !SCOPE_NAME.test(declaration.name))
    problems.push(`scope "${String(declaration.name)}" must be "<area>:read" or "<area>:write"`);
  if (typeof declaration.group !== 'string' || declaration.group.trim() === '')
    problems.push(`scope "${String(declaration.name)}" needs a group`);
  if (typeof declaration.allows !== 'string' || declaration.allows.trim() === '')
    problems.push(`scope "${String(declaration.name)}" needs an "allows" phrase`);
  return problems;
}

/**
 * Every scope a credential (API key, OAuth grant, agent run) can carry, in catalog order. Filled once at
 * start-up by the tool explorer from the providers' declarations, so a new scope is declared in one
 * place; key creation, OAuth, the agent's role scopes and the account page all read it from here.
 */
@Injectable()
export class ScopeCatalog {
  private views: readonly ScopeView[] = [];
  private byName: ReadonlySet<string> = new Set();

  seal(views: readonly ScopeView[]): void {
    if (this.byName.size > 0) throw new Error('The scope catalog is already built');
    this.views = Object.freeze(views.map((view) => Object.freeze({ ...view })));
    this.byName = new Set(views.map((view) => view.name));
  }

  list(): readonly ScopeView[] {
    return this.views;
  }

  names(): string[] {
    return this.views.map((view) => view.name);
  }

  /** The read scopes: what a project viewer's agent run gets. */
  readNames(): string[] {
    return this.views.filter((view) => view.access === 'read').map((view) => view.name);
  }

  has(name: unknown): boolean {
    return typeof name === 'string' && this.byName.has(name);
  }

  /** 400 VALIDATION_FAILED listing the allowed values (API.md, POST /api/api-keys) for any unknown scope. */
  assertKnown(scopes: readonly string[], field = 'scopes'): void {
    if (scopes.every((scope) => this.has(scope))) return;
    const message = `each value in ${field} must be one of: ${this.names().join(', ')}`;
    throw AppException.validation(message, [{ field, message }]);
  }
}

/** Global so credentials (api-keys, oauth), the agent and the tool explorer share the one instance. */
@Global()
@Module({ providers: [ScopeCatalog], exports: [ScopeCatalog] })
export class ScopeCatalogModule {}
