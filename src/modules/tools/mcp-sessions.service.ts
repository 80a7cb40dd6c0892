import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  ElicitResultSchema,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ElicitRequestFormParams,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { DatabasePool } from '../../database/database-pool.js';
import { PgChannelListener } from '../../database/pg-channel-listener.js';
import { toMcpClientInfo, type McpClientInfo } from './mcp-client-info.js';
import { MCP_ANSWER_CHANNEL, McpSessionsRepository, type StoredAnswer } from './mcp-sessions.repository.js';

/**
 * Negotiated revisions whose sessions can be stored: the 2025-era ones that have elicitation (2025-03-26 and older
 * have none, so a stored session would buy them nothing; they get a label session like every other client).
 */
const SESSION_REVISIONS: ReadonlySet<string> = new Set(['2025-06-18', '2025-11-25']);
/** A stored session's `Mcp-Session-Id`: 32 random bytes, base64url (43 visible ASCII characters, as the spec asks). */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;
/** A label session's `Mcp-Session-Id`: `l1.<payload>.<mac>`, base64url parts (see labelSession). */
const LABEL_SESSION_ID = /^l1\.([A-Za-z0-9_-]{1,1200})\.([A-Za-z0-9_-]{22})$/;
/** Capabilities larger than this are not kept whole (a client chooses them); what we act on is kept. */
const MAX_CAPABILITIES_JSON = 8_192;
/** Label sessions remembered as verified: every active key and client pair of a busy instance; an entry is ~0.3 KB. */
const MAX_VERIFIED_LABELS = 4_096;
/** The ids of our elicitation requests: random strings, so concurrent calls of one session never share one. */
const REQUEST_ID_PREFIX = 'atrium-confirm-';
/** The ids of other requests to the client (an MCP extension's sampling or elicitation): the answer is kept whole. */
const ASK_ID_PREFIX = 'atrium-ask-';
/** An answer larger than this is refused (it is stored until the waiting call reads it). */
const MAX_ANSWER_JSON = 65_536;
/** Re-read a pending answer this often even without a notification (a lost LISTEN connection must not stall a call). */
const REREAD_EVERY_MS = 1_000;
const PRUNE_EVERY_MS = 3_600_000;

/** A live 2025-era MCP session, as the request presenting it may use it. */
export interface McpSession {
  idHash: Buffer;
  protocolVersion: string;
  client: McpClientInfo;
  /** The client declared `elicitation` in initialize: a write of a "confirm writes" credential asks it. */
  canElicit: boolean;
  /** Stored in PostgreSQL (the server can ask the client mid-call); false for a label session. */
  stored: boolean;
}

/** What an `initialize` that opens a session says about its client. */
export interface McpSessionOpening {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  client: McpClientInfo;
  /** The session must be stored (the server may ask this client mid-call); otherwise it is a label session. */
  stored: boolean;
}

/** What DELETE with an Mcp-Session-Id came to. */
export type SessionEnd = 'ended' | 'unknown' | 'not-endable';

/** What came of asking the client to confirm a write. */
export type ElicitOutcome =
  | { action: 'accept' | 'decline' | 'cancel' }
  | { failed: 'timeout' | 'aborted' }
  | { failed: 'client-error'; detail: string };

/** Wakes the tools/call waiting on an elicitation answer when any instance stored it (see PgChannelListener). */
@Injectable()
export class McpAnswerListener extends PgChannelListener implements OnModuleDestroy {
  constructor(database: DatabasePool) {
    super(database, MCP_ANSWER_CHANNEL);
  }
}

/**
 * MCP sessions of the 2025-era door (Streamable HTTP §Session Management). Every `initialize` that names its client
 * opens one, because on these revisions the client says who it is only there, and the audit log and usage view name
 * the client of every call. Two kinds, both usable on any instance:
 * - a stored session, for clients the server may ask mid-call (they declared `elicitation` on 2025-06-18/2025-11-25,
 *   or an extension wants one): kept in PostgreSQL with an idle expiry, its id random and stored as a hash;
 * - a label session for everyone else: the id itself carries the client's name, version and revision, sealed with an
 *   HMAC bound to the credential, so it needs no row, no lookup and no expiry. A client that cannot re-initialize
 *   after an expiry (the v1 SDK client does not) is never exposed to one; it ends with its credential, and DELETE
 *   answers 405 as the spec allows for sessions a client cannot end.
 */
@Injectable()
export class McpSessions implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('McpSessions');
  private pruneTimer?: NodeJS.Timeout;
  /** HMAC key of label sessions (derived from the pepper, so every instance verifies every other's). */
  private readonly labelKey: Buffer;
  /**
   * Label sessions this process has verified, by credential and id: a client presents the same one on every request,
   * and whether it verifies depends on nothing that can change (the id, the credential, a key fixed at start-up), so
   * it needs no invalidation; the credential itself is checked on every request before. Only verified ids are kept,
   * so a forged one is checked in full every time. Bounded by dropping the oldest entry (insertion order).
   */
  private readonly verifiedLabels = new Map<string, McpSession>();

  constructor(
    private readonly repository: McpSessionsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.labelKey = createHmac('sha256', config.secrets.tokenPepper).update('atrium:mcp-label-session').digest();
  }

  onModuleInit(): void {
    this.pruneTimer = setInterval(() => void this.prune(), Math.min(PRUNE_EVERY_MS, this.config.mcp.sessionTtlMs));
    this.pruneTimer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.pruneTimer);
  }

  /** An unguessable session id (the transport's `sessionIdGenerator`). */
  newId(): string {
    return randomBytes(32).toString('base64url');
  }

  /**
   * The session the reply to this `initialize` opens, if any: one for every client that names itself, stored when
   * the revision the SDK server will answer (its own rule: the requested one if supported, else the latest) has
   * elicitation and the client declared it (or an extension wants a session for its capabilities).
   */
  openingFor(
    params: unknown,
    wantsSession?: (capabilities: Record<string, unknown>) => boolean,
  ): McpSessionOpening | undefined {
    if (typeof params !== 'object' || params === null) return undefined;
    const {
      protocolVersion: requested,
      capabilities,
      clientInfo,
    } = params as { protocolVersion?: unknown; capabilities?: unknown; clientInfo?: unknown };
    const protocolVersion =
      typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
        ? requested
        : LATEST_PROTOCOL_VERSION;
    const client = toMcpClientInfo(clientInfo);
    if (!client) return undefined;
    if (
      !SESSION_REVISIONS.has(protocolVersion) ||
      typeof capabilities !== 'object' ||
      capabilities === null ||
      Array.isArray(capabilities)
    ) {
      return { protocolVersion, capabilities: {}, client, stored: false };
    }
    const declared = capabilities as Record<string, unknown>;
    const elicits = typeof declared.elicitation === 'object' && declared.elicitation !== null;
    if (!elicits && !wantsSession?.(declared)) return { protocolVersion, capabilities: {}, client, stored: false };
    const kept = JSON.stringify(declared).length <= MAX_CAPABILITIES_JSON ? declared : { elicitation: {} };
    return { protocolVersion, capabilities: kept, client, stored: true };
  }

  /** A label session's id for this credential: the opening's revision and client, sealed (see the class comment). */
  labelSession(credentialId: string, opening: McpSessionOpening): string {
    const payload = Buffer.from(
      JSON.stringify([opening.protocolVersion, opening.client.name, opening.client.version]),
    ).toString('base64url');
    return `l1.${payload}.${this.labelMac(credentialId, payload)}`;
  }

  private labelMac(credentialId: string, payload: string): string {
    return createHmac('sha256', this.labelKey)
      .update(`${credentialId}\0${payload}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
  }

  /** The label session this header names for this credential, or undefined (forged, altered or another credential's). */
  private resolveLabel(header: string, credentialId: string): McpSession | undefined {
    const entry = `${credentialId} ${header}`;
    const known = this.verifiedLabels.get(entry);
    if (known) return known;
    const session = this.verifyLabel(header, credentialId);
    if (!session) return undefined;
    if (this.verifiedLabels.size >= MAX_VERIFIED_LABELS)
      this.verifiedLabels.delete(this.verifiedLabels.keys().next().value!);
    this.verifiedLabels.set(entry, session);
    return session;
  }

  private verifyLabel(header: string, credentialId: string): McpSession | undefined {
    const match = LABEL_SESSION_ID.exec(header);
    if (!match) return undefined;
    const [, payload, mac] = match;
    const expected = Buffer.from(this.labelMac(credentialId, payload));
    if (!timingSafeEqual(Buffer.from(mac), expected)) return undefined;
    const [protocolVersion, name, version] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [
      string,
      string,
      string,
    ];
    // Shared by every request presenting this id: nothing may change it.
    return Object.freeze({
      idHash: hashOf(header),
      protocolVersion,
      client: Object.freeze({ name, version }),
      canElicit: false,
      stored: false,
    });
  }

  /** Stores the session before the initialize answer leaves (the client's next request may reach another instance). */
  async open(sessionId: string, credentialId: string, opening: McpSessionOpening): Promise<void> {
    await this.repository.insert({
      idHash: hashOf(sessionId),
      credentialId,
      protocolVersion: opening.protocolVersion,
      clientCapabilities: opening.capabilities,
      clientName: opening.client.name,
      clientVersion: opening.client.version,
      ttlMs: this.config.mcp.sessionTtlMs,
    });
  }

  /**
   * The session this header names for this credential, or undefined: unknown, malformed, expired and another
   * credential's session all look the same (404), so a session id reveals nothing to someone else's key. Use
   * extends the idle expiry, written at most once a minute (or a tenth of the TTL) rather than on every request.
   */
  async resolve(header: string, credentialId: string): Promise<McpSession | undefined> {
    if (header.startsWith('l1.')) return this.resolveLabel(header, credentialId);
    if (!SESSION_ID.test(header)) return undefined;
    const idHash = hashOf(header);
    const row = await this.repository.findLive(idHash);
    if (!row || row.credentialId !== credentialId) return undefined;
    const ttl = this.config.mcp.sessionTtlMs;
    const touchEvery = Math.min(60_000, ttl / 10);
    if (new Date(row.expiresAt).getTime() < Date.now() + ttl - touchEvery) await this.repository.extend(idHash, ttl);
    return {
      idHash,
      protocolVersion: row.protocolVersion,
      client: { name: row.clientName, version: row.clientVersion },
      canElicit: typeof row.clientCapabilities.elicitation === 'object' && row.clientCapabilities.elicitation !== null,
      stored: true,
    };
  }

  /** DELETE with the session id: a stored session ends; a label session cannot (405); anything else is unknown (404). */
  async end(header: string, credentialId: string): Promise<SessionEnd> {
    if (header.startsWith('l1.')) return this.resolveLabel(header, credentialId) ? 'not-endable' : 'unknown';
    if (!SESSION_ID.test(header)) return 'unknown';
    return (await this.repository.delete(hashOf(header), credentialId)) ? 'ended' : 'unknown';
  }

  /** Every instance prunes (a DELETE of expired rows is harmless when two race). */
  async prune(): Promise<void> {
    try {
      const pruned = await this.repository.pruneExpired();
      if (pruned.sessions + pruned.elicitations > 0) this.logger.log({ msg: 'expired MCP sessions pruned', ...pruned });
    } catch (error) {
      this.logger.warn({
        msg: 'MCP session prune failed',
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}

/**
 * Confirmation of a write through `elicitation/create` on a 2025-era session. The question goes out on the SSE
 * stream of the waiting tools/call; the client POSTs its answer separately, and that POST may reach any instance.
 * The answer is therefore written to PostgreSQL (once, by session and request id) and the waiting instance woken by
 * pg_notify from the same statement. The notification is only a wake-up (plus a re-read every second): the row is
 * the truth, which is what makes an answer usable once and lets a lost LISTEN connection cost latency, not answers.
 * The agent-run stream works the same way; Redis pub/sub would need the same row for the once-only rule anyway.
 */
@Injectable()
export class McpWriteConfirmations {
  constructor(
    private readonly repository: McpSessionsRepository,
    private readonly listener: McpAnswerListener,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Asks and waits, bounded by MCP_CONFIRM_TIMEOUT_MS and by `signal` (the client left or cancelled the call).
   * `send` writes a message on the call's stream. The request is hand-built rather than sent with the SDK's
   * `elicitInput`: the SDK numbers requests 0, 1, … per Server, and this door builds a Server per POST, so two
   * calls of one session would both ask with id 0 and an answer could not say which call it confirms.
   */
  async ask(
    session: McpSession,
    params: ElicitRequestFormParams,
    send: (message: JSONRPCMessage) => Promise<void>,
    signal: AbortSignal,
  ): Promise<ElicitOutcome> {
    const outcome = await this.request(session, REQUEST_ID_PREFIX, 'elicitation/create', params, send, signal);
    if ('failed' in outcome) return outcome;
    return outcomeOf(outcome.answer);
  }

  /**
   * Any request to the client on a 2025-era session (an MCP extension's sampling or elicitation), answered the same
   * way as a confirmation; the client's result comes back whole (bounded in size).
   */
  async askClient(
    session: McpSession,
    method: string,
    params: Record<string, unknown>,
    send: (message: JSONRPCMessage) => Promise<void>,
    signal: AbortSignal,
  ): Promise<
    { result: Record<string, unknown> } | { failed: 'timeout' | 'aborted' } | { failed: 'client-error'; detail: string }
  > {
    const outcome = await this.request(session, ASK_ID_PREFIX, method, params, send, signal);
    if ('failed' in outcome) return outcome;
    if ('error' in outcome.answer)
      return { failed: 'client-error', detail: `${outcome.answer.error.code} ${outcome.answer.error.message}` };
    return { result: outcome.answer.result };
  }

  private async request(
    session: McpSession,
    prefix: string,
    method: string,
    params: Record<string, unknown>,
    send: (message: JSONRPCMessage) => Promise<void>,
    signal: AbortSignal,
  ): Promise<{ answer: StoredAnswer } | { failed: 'timeout' | 'aborted' }> {
    const requestId = `${prefix}${randomBytes(16).toString('base64url')}`;
    const timeoutMs = this.config.mcp.confirmTimeoutMs;
    let pending = false;
    let wake = (): void => undefined;
    const poke = (): void => {
      pending = true;
      wake();
    };
    const unsubscribe = this.listener.subscribe(requestId, poke);
    signal.addEventListener('abort', poke);
    try {
      await this.listener.ready();
      // The row outlives the wait by a minute: if this process dies, the pruner removes it, and nothing can use it.
      await this.repository.insertElicitation(requestId, session.idHash, timeoutMs + 60_000);
      try {
        await send({ jsonrpc: '2.0', id: requestId, method, params });
      } catch {
        await this.repository.withdraw(requestId);
        return { failed: 'aborted' };
      }
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        pending = false;
        const answer = await this.repository.takeAnswer(requestId);
        if (answer) return { answer };
        const left = deadline - Date.now();
        if (left <= 0 || signal.aborted) break;
        if (!pending) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(left, REREAD_EVERY_MS));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = () => undefined;
        }
      }
      // An answer stored before the withdrawal still counts (its POST was told 202); one after finds nothing.
      const late = await this.repository.withdraw(requestId);
      if (late) return { answer: late };
      if (!signal.aborted) {
        // Spec: a request the sender gives up on is cancelled, so the client stops asking the user.
        await send({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId, reason: 'confirmation timed out' },
        }).catch(() => undefined);
      }
      return { failed: signal.aborted ? 'aborted' : 'timeout' };
    } catch (error) {
      await this.repository.withdraw(requestId).catch(() => undefined);
      throw error;
    } finally {
      unsubscribe();
      signal.removeEventListener('abort', poke);
    }
  }

  /**
   * The client's JSON-RPC response to one of our questions, POSTed with its session id (any instance). Stored only if
   * it is a well-formed elicitation answer for an open question of this very session; anything else is 400 invalid
   * request and changes nothing (a replay, a forged or unknown id, another session's question, a late answer).
   */
  async answer(session: McpSession, message: JSONRPCResultResponse | JSONRPCErrorResponse): Promise<void> {
    let stored: StoredAnswer;
    const id = message.id;
    const asked = typeof id === 'string' && id.startsWith(ASK_ID_PREFIX);
    if ('result' in message && asked) {
      if (JSON.stringify(message.result).length > MAX_ANSWER_JSON)
        throw new AppException(ErrorCode.InvalidRequest, 'Invalid Request: the answer is too large');
      stored = { result: message.result };
    } else if ('result' in message) {
      const parsed = ElicitResultSchema.safeParse(message.result);
      if (!parsed.success)
        throw new AppException(
          ErrorCode.InvalidRequest,
          'Invalid Request: the result is not an elicitation answer (action accept, decline or cancel)',
        );
      stored = { result: { action: parsed.data.action } };
    } else {
      stored = { error: { code: message.error.code, message: String(message.error.message).slice(0, 500) } };
    }
    const claimed =
      typeof id === 'string' &&
      (id.startsWith(REQUEST_ID_PREFIX) || asked) &&
      id.length <= 100 &&
      (await this.repository.claimAnswer(id, session.idHash, stored));
    if (!claimed) {
      throw new AppException(
        ErrorCode.InvalidRequest,
        'Invalid Request: this session has no open request with this id (unknown, already answered or expired)',
      );
    }
  }
}

function outcomeOf(answer: StoredAnswer): ElicitOutcome {
  if ('error' in answer) return { failed: 'client-error', detail: `${answer.error.code} ${answer.error.message}` };
  const action = answer.result.action as string | undefined;
  return action === 'accept' || action === 'decline' ? { action } : { action: 'cancel' };
}

function hashOf(sessionId: string): Buffer {
  return createHash('sha256').update(sessionId).digest();
}
