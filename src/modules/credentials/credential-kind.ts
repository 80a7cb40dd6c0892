import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { Caller } from '../../common/auth/caller.js';

/** The two kinds of entry point a credential may open: the tool doors (Area A) and the backend routes (Area B). */
export type CredentialDoor = 'tools' | 'backend';

/** One secret prefix a kind issues, and whether that secret is presented as a bearer credential. */
export interface CredentialPrefix {
  prefix: string;
  /** How an error names a secret with this prefix when it is presented where it does not work. */
  label: string;
  /** False for a secret the kind issues but that never authenticates a call (an OAuth refresh token). */
  bearer: boolean;
}

/** A successful authentication: the caller, and what the door's own decorators read as `request.user`. */
export interface Authenticated {
  caller: Caller;
  user: object;
}

/** Where a tool-door bearer was presented from: the client address (Express `req.ip`, under TRUST_PROXY). */
export interface PresentedFrom {
  ip: string | undefined;
}

/** After a call of a tool-door caller: what its usage log records. */
export interface CallUsage {
  tool: string | null;
  status: number;
  durationMs: number;
}

/**
 * A kind of credential (user token, project token, API key, OAuth grant, agent run, …) as a plug-in: it owns its
 * prefixes, its lookup and liveness, the budget it spends and how the audit log names it. Guards, limiters and the
 * audit log ask the CredentialRegistry, which finds the plug-in; nothing else knows a kind. Adding one:
 * docs/adding-a-credential.md.
 */
export interface CredentialPlugin {
  /** Unique; `Caller.kind` of its callers. */
  readonly name: string;
  /** `actor.via` of its callers' audit entries (the audit log's CHECK constraint lists each, by migration). */
  readonly via: string;
  /** Secrets it issues; empty for a kind without a prefix. */
  readonly prefixes: readonly CredentialPrefix[];
  /** At most one kind takes a bearer no prefix claims (the user access token, a JWT). */
  readonly takesUnprefixed?: boolean;
  /**
   * The doors it opens: `tools`, and on the backend either every route or only the routes that opted in with
   * @AllowProjectToken(). A kind opening no door (an agent run) only makes callers in-process.
   */
  readonly doors: { tools?: true; backend?: 'every-route' | 'opted-in-routes' };
  /** Where it sits among the tool door's kinds in the messages naming them (lowest first). */
  readonly position?: number;
  /** How the tool door's 401 for a missing credential names it, e.g. "a personal API key (…create one with …)". */
  readonly howToGet?: string;
  /** How the tool door's 401 for a wrong credential names what it expects, e.g. "a personal API key (atr_…)". */
  readonly expected?: string;
  /** How an error names a bearer of this kind presented where it does not work. */
  describe(token: string): string;
  /** The 401 message for a bearer of this kind presented at a door it does not open. */
  wrongDoor(door: CredentialDoor): string;
  /** The 401 message when the bearer is not a usable credential of this kind (a kind may throw a more precise one). */
  readonly invalidMessage: string;
  /**
   * The caller of a usable credential, else null; throws AppException for a refusal it can name (revoked, expired,
   * a client address outside the admin policy's or the credential's allowedIps). `from` is given on the tool doors.
   */
  authenticate(token: string, from?: PresentedFrom): Promise<Authenticated | null>;
  /** Whether the credential still works, and until when, for work that outlives its request (a run stream). */
  liveness?(token: string): Promise<{ expiresAt: Date } | null>;
  /** Spends one call of the caller's budget on the tool doors; throws 429 when it is spent. */
  spend?(caller: Caller): Promise<void>;
  /** Records a finished tool-door call in the kind's usage log. */
  recordUsage?(caller: Caller, usage: CallUsage): void;
}

export const CREDENTIAL_KIND = 'atrium:credential-kind';

/** Marks a provider as a credential kind; the registry finds it at start-up (the way @ToolProvider is found). */
export const CredentialKind = (): ClassDecorator => applyDecorators(Injectable(), SetMetadata(CREDENTIAL_KIND, true));
