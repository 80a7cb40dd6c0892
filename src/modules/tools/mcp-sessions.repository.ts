import { Injectable } from '@nestjs/common';
import { sql } from 'kysely';
import type { JsonObject } from '../../database/database.types.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';

/** The channel a stored elicitation answer is announced on (payload: the request id). */
export const MCP_ANSWER_CHANNEL = 'mcp_elicitation_answers';

export interface McpSessionRecord {
  credentialId: string;
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientName: string;
  clientVersion: string;
  expiresAt: Date;
}

export interface NewMcpSession {
  idHash: Buffer;
  credentialId: string;
  protocolVersion: string;
  clientCapabilities: Record<string, unknown>;
  clientName: string;
  clientVersion: string;
  ttlMs: number;
}

/** What a claimed answer holds: the client's JSON-RPC `result` (its action), or its `error`. */
export type StoredAnswer = { result: Record<string, unknown> } | { error: { code: number; message: string } };

const inMs = (ms: number) => sql<Date>`now() + ${ms} * interval '1 millisecond'`;

/** SQL of the MCP sessions and their pending elicitations (migration 1764210600000). */
@Injectable()
export class McpSessionsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async insert(session: NewMcpSession): Promise<void> {
    await this.db
      .insertInto('mcpSessions')
      .values({
        idHash: session.idHash,
        credentialId: session.credentialId,
        protocolVersion: session.protocolVersion,
        clientCapabilities: session.clientCapabilities as JsonObject,
        clientName: session.clientName,
        clientVersion: session.clientVersion,
        expiresAt: inMs(session.ttlMs),
      })
      .execute();
  }

  /** The live session with this hash, whoever owns it (the caller compares the credential). */
  async findLive(idHash: Buffer): Promise<McpSessionRecord | undefined> {
    const row = await this.db
      .selectFrom('mcpSessions')
      .select(['credentialId', 'protocolVersion', 'clientCapabilities', 'clientName', 'clientVersion', 'expiresAt'])
      .where('idHash', '=', idHash)
      .where('expiresAt', '>', sql<Date>`now()`)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      credentialId: row.credentialId,
      protocolVersion: row.protocolVersion,
      clientCapabilities: (row.clientCapabilities ?? {}) as Record<string, unknown>,
      clientName: row.clientName,
      clientVersion: row.clientVersion,
      expiresAt: new Date(row.expiresAt),
    };
  }

  async extend(idHash: Buffer, ttlMs: number): Promise<void> {
    await this.db
      .updateTable('mcpSessions')
      .set({ expiresAt: inMs(ttlMs) })
      .where('idHash', '=', idHash)
      .execute();
  }

  /** Ends the session (its pending elicitations go with it); false if there was none for this credential. */
  async delete(idHash: Buffer, credentialId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('mcpSessions')
      .where('idHash', '=', idHash)
      .where('credentialId', '=', credentialId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Records the first use of a requestState nonce: true for the first caller, false for every later one (a replay,
   * or a duplicate sent at the same moment: the primary key decides).
   */
  async useRequestState(nonce: string, ttlMs: number): Promise<boolean> {
    const inserted = await this.db
      .insertInto('mcpRequestStateUses')
      .values({ nonce, expiresAt: inMs(ttlMs) })
      .onConflict((conflict) => conflict.column('nonce').doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async pruneExpired(): Promise<{ sessions: number; elicitations: number }> {
    await this.db
      .deleteFrom('mcpRequestStateUses')
      .where('expiresAt', '<', sql<Date>`now()`)
      .execute();
    const elicitations = await this.db
      .deleteFrom('mcpElicitations')
      .where('expiresAt', '<', sql<Date>`now()`)
      .executeTakeFirst();
    const sessions = await this.db
      .deleteFrom('mcpSessions')
      .where('expiresAt', '<', sql<Date>`now()`)
      .executeTakeFirst();
    return { sessions: Number(sessions.numDeletedRows), elicitations: Number(elicitations.numDeletedRows) };
  }

  async insertElicitation(requestId: string, sessionHash: Buffer, ttlMs: number): Promise<void> {
    await this.db
      .insertInto('mcpElicitations')
      .values({ requestId, sessionHash, expiresAt: inMs(ttlMs) })
      .execute();
  }

  /**
   * Stores the client's answer if this session has this question open and unanswered (once: a replay or a second
   * answer finds answered_at set), and wakes the waiting instance in the same statement (delivered at commit).
   */
  async claimAnswer(requestId: string, sessionHash: Buffer, answer: StoredAnswer): Promise<boolean> {
    const rows = await this.db
      .with('claimed', (db) =>
        db
          .updateTable('mcpElicitations')
          .set({ answer: answer as unknown as JsonObject, answeredAt: sql<Date>`now()` })
          .where('requestId', '=', requestId)
          .where('sessionHash', '=', sessionHash)
          .where('answeredAt', 'is', null)
          .returning('requestId'),
      )
      .selectFrom('claimed')
      .select(sql<string>`pg_notify(${MCP_ANSWER_CHANNEL}, claimed.request_id)`.as('notified'))
      .execute();
    return rows.length > 0;
  }

  /** Takes the answer if there is one (the row goes: an answer is used once). */
  async takeAnswer(requestId: string): Promise<StoredAnswer | undefined> {
    const row = await this.db
      .deleteFrom('mcpElicitations')
      .where('requestId', '=', requestId)
      .where('answeredAt', 'is not', null)
      .returning('answer')
      .executeTakeFirst();
    return (row?.answer ?? undefined) as StoredAnswer | undefined;
  }

  /**
   * Closes the question for good (time-out, client gone): an answer stored just before still counts and is returned;
   * an answer arriving after finds no row.
   */
  async withdraw(requestId: string): Promise<StoredAnswer | undefined> {
    const row = await this.db
      .deleteFrom('mcpElicitations')
      .where('requestId', '=', requestId)
      .returning('answer')
      .executeTakeFirst();
    return (row?.answer ?? undefined) as StoredAnswer | undefined;
  }
}
