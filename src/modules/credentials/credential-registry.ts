import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import type { Caller } from '../../common/auth/caller.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import {
  CREDENTIAL_KIND,
  type Authenticated,
  type CallUsage,
  type CredentialPlugin,
  type PresentedFrom,
} from './credential-kind.js';

/**
 * Every credential kind of the app, found at start-up among the providers marked @CredentialKind(). The one place a
 * bearer is matched to its kind (by prefix) and a caller to its plug-in: guards, limiters, the audit log and the
 * doors ask here, so a new kind is a plug-in and nothing else changes.
 */
@Injectable()
export class CredentialRegistry implements OnModuleInit {
  private kinds: readonly CredentialPlugin[] = [];
  private byName = new Map<string, CredentialPlugin>();
  private byPrefix: readonly [string, CredentialPlugin][] = [];
  private unprefixed: CredentialPlugin | undefined;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const kinds: CredentialPlugin[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as CredentialPlugin | undefined;
      const metatype = wrapper.metatype as (new (...args: never[]) => unknown) | null | undefined;
      if (!instance || !metatype || !this.reflector.get<boolean>(CREDENTIAL_KIND, metatype)) continue;
      kinds.push(instance);
    }
    this.register(kinds);
  }

  /** Checks the kinds against each other (start-up fails on a clash) and freezes the lookup tables. */
  register(kinds: readonly CredentialPlugin[]): void {
    const problems: string[] = [];
    const byName = new Map<string, CredentialPlugin>();
    const byPrefix: [string, CredentialPlugin][] = [];
    for (const kind of kinds) {
      if (byName.has(kind.name)) problems.push(`two credential kinds are named "${kind.name}"`);
      byName.set(kind.name, kind);
      for (const { prefix } of kind.prefixes) {
        const clash = byPrefix.find(([other]) => other.startsWith(prefix) || prefix.startsWith(other));
        if (clash) problems.push(`credential kinds "${clash[1].name}" and "${kind.name}" share the prefix "${prefix}"`);
        byPrefix.push([prefix, kind]);
      }
      if (kind.doors.tools && (!kind.howToGet || !kind.expected))
        problems.push(
          `credential kind "${kind.name}" opens the tool doors but does not say how to get one (howToGet, expected)`,
        );
    }
    const unprefixed = kinds.filter((kind) => kind.takesUnprefixed);
    if (unprefixed.length > 1)
      problems.push(
        `only one credential kind may take unprefixed bearers: ${unprefixed.map((kind) => kind.name).join(', ')}`,
      );
    if (problems.length > 0) throw new Error(`Credential kinds: ${problems.join('; ')}`);
    this.kinds = Object.freeze([...kinds]);
    this.byName = byName;
    this.byPrefix = Object.freeze(byPrefix);
    this.unprefixed = unprefixed[0];
  }

  list(): readonly CredentialPlugin[] {
    return this.kinds;
  }

  /** The plug-in of a caller's kind; throws for a kind nobody registered (a caller is only ever made by one). */
  of(caller: Pick<Caller, 'kind'>): CredentialPlugin {
    const kind = this.byName.get(caller.kind);
    if (!kind) throw new Error(`No credential kind "${caller.kind}" is registered`);
    return kind;
  }

  /** The kind a bearer belongs to by its prefix (or the kind taking unprefixed bearers); undefined when none. */
  kindOf(token: string): CredentialPlugin | undefined {
    for (const [prefix, kind] of this.byPrefix) if (token.startsWith(prefix)) return kind;
    return this.unprefixed;
  }

  /** Whether this bearer is one its kind presents as a credential (not, say, an OAuth refresh token). */
  private isBearer(kind: CredentialPlugin, token: string): boolean {
    const prefix = kind.prefixes.find((candidate) => token.startsWith(candidate.prefix));
    return prefix ? prefix.bearer : kind.takesUnprefixed === true;
  }

  /** The tool doors' kinds in the order their messages name them. */
  private toolKinds(): CredentialPlugin[] {
    return this.kinds.filter((kind) => kind.doors.tools).sort((a, b) => (a.position ?? 0) - (b.position ?? 0));
  }

  /**
   * The caller of a tool-door bearer (undefined: none was sent); throws the 401 that names what is wrong. A usable
   * credential's call is counted by its kind before this resolves (the count is also the revocation check). `from`
   * is where it came from: each kind checks it against the admin policy and the credential's own allowedIps.
   */
  async authenticateTool(token: string | undefined, from: PresentedFrom): Promise<Authenticated> {
    if (!token)
      throw new AppException(
        ErrorCode.MissingApiKey,
        `This route needs ${this.toolKinds()
          .map((kind) => kind.howToGet)
          .join(' or ')}`,
      );
    const kind = this.kindOf(token);
    if (!kind || !kind.doors.tools || !this.isBearer(kind, token)) {
      const got = kind ? kind.describe(token) : 'an unrecognised credential';
      throw new AppException(
        ErrorCode.InvalidApiKey,
        `This route expects ${this.toolKinds()
          .map((candidate) => candidate.expected)
          .join(' or ')}, got ${got}; user and project tokens work only on the backend routes under /api`,
      );
    }
    const found = await kind.authenticate(token, from);
    if (!found) throw new AppException(ErrorCode.InvalidApiKey, kind.invalidMessage);
    return found;
  }

  /**
   * The caller of a backend bearer; `optedIn` says whether the route accepts the kinds that open only the routes
   * that opted in. Throws the 401 that names what is wrong.
   */
  async authenticateBackend(token: string, optedIn: boolean): Promise<Authenticated> {
    const kind = this.kindOf(token);
    if (!kind)
      throw new AppException(ErrorCode.AuthInvalid, 'The access token is invalid or has expired; log in again');
    const opens = kind.doors.backend;
    if (!opens || (opens === 'opted-in-routes' && !optedIn) || !this.isBearer(kind, token)) {
      throw new AppException(ErrorCode.AuthInvalid, kind.wrongDoor('backend'));
    }
    const found = await kind.authenticate(token);
    if (!found) throw new AppException(ErrorCode.AuthInvalid, kind.invalidMessage);
    return found;
  }

  /** Whether a bearer still works and until when (null: expired, revoked, unknown, or its kind cannot tell). */
  async liveness(token: string): Promise<{ expiresAt: Date } | null> {
    const kind = this.kindOf(token);
    if (!kind?.liveness || !this.isBearer(kind, token)) return null;
    return kind.liveness(token);
  }

  /** Spends one tool-door call of the caller's budget, as its kind says. */
  async spend(caller: Caller): Promise<void> {
    await this.of(caller).spend?.(caller);
  }

  recordUsage(caller: Caller, usage: CallUsage): void {
    this.of(caller).recordUsage?.(caller, usage);
  }
}
