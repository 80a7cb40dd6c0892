import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { returningRows } from '../../database/returning-rows.js';

/** The channel a stored elicitation answer is announced on (payload: the request id). */
export const MCP_ANSWER_CHANNEL = 'mcp_elicitation_answers';

export interface McpSessionRow {
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

/** What a claimed answer holds: the client's JSON-RPC `result`, or its `error`. */
export type StoredAnswer = { result: Record<string, unknown> } | { error: { code: number; message: string } };

/** SQL of the MCP sessions and their pending elicitations (migration 1764210600000). */
@Injectable()
export class McpSessionsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async insert(session: NewMcpSession): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO mcp_sessions (id_hash, credential_id, protocol_version, client_capabilities, client_name, client_version, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond')`,
      [session.idHash, session.credentialId, session.protocolVersion, session.clientCapabilities, session.clientName, session.clientVersion, session.ttlMs],
    );
  }

  /** The live session with this hash, whoever owns it (the caller compares the credential). */
  async findLive(idHash: Buffer): Promise<McpSessionRow | undefined> {
    const rows: McpSessionRow[] = await this.dataSource.query(
      `SELECT credential_id AS "credentialId", protocol_version AS "protocolVersion", client_capabilities AS "clientCapabilities",
              client_name AS "clientName", client_version AS "clientVersion", expires_at AS "expiresAt"
         FROM mcp_sessions WHERE id_hash = $1 AND expires_at > now()`,
      [idHash],
    );
    return rows[0];
  }

  async extend(idHash: Buffer, ttlMs: number): Promise<void> {
    await this.dataSource.query(`UPDATE mcp_sessions SET expires_at = now() + $2 * interval '1 millisecond' WHERE id_hash = $1`, [idHash, ttlMs]);
  }

  /** Ends the session (its pending elicitations go with it); false if there was none for this credential. */
  async delete(idHash: Buffer, credentialId: string): Promise<boolean> {
    const rows = returningRows(await this.dataSource.query(`DELETE FROM mcp_sessions WHERE id_hash = $1 AND credential_id = $2 RETURNING 1`, [idHash, credentialId]));
    return rows.length > 0;
  }

  async pruneExpired(): Promise<{ sessions: number; elicitations: number }> {
    const elicitations = returningRows(await this.dataSource.query(`DELETE FROM mcp_elicitations WHERE expires_at < now() RETURNING 1`));
    const sessions = returningRows(await this.dataSource.query(`DELETE FROM mcp_sessions WHERE expires_at < now() RETURNING 1`));
    return { sessions: sessions.length, elicitations: elicitations.length };
  }

  async insertElicitation(requestId: string, sessionHash: Buffer, ttlMs: number): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO mcp_elicitations (request_id, session_hash, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')`,
      [requestId, sessionHash, ttlMs],
    );
  }

  /**
   * Stores the client's answer if this session has this question open and unanswered (once: a replay or a second
   * answer finds answered_at set), and wakes the waiting instance in the same statement (delivered at commit).
   */
  async claimAnswer(requestId: string, sessionHash: Buffer, answer: StoredAnswer): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `WITH claimed AS (
         UPDATE mcp_elicitations SET answer = $3, answered_at = now()
          WHERE request_id = $1 AND session_hash = $2 AND answered_at IS NULL
          RETURNING request_id)
       SELECT pg_notify('${MCP_ANSWER_CHANNEL}', request_id) FROM claimed`,
      [requestId, sessionHash, answer],
    );
    return rows.length > 0;
  }

  /** Takes the answer if there is one (the row goes: an answer is used once). */
  async takeAnswer(requestId: string): Promise<StoredAnswer | undefined> {
    const rows = returningRows<{ answer: StoredAnswer }>(
      await this.dataSource.query(`DELETE FROM mcp_elicitations WHERE request_id = $1 AND answered_at IS NOT NULL RETURNING answer`, [requestId]),
    );
    return rows[0]?.answer;
  }

  /**
   * Closes the question for good (time-out, client gone): an answer stored just before still counts and is returned;
   * an answer arriving after finds no row.
   */
  async withdraw(requestId: string): Promise<StoredAnswer | undefined> {
    const rows = returningRows<{ answer: StoredAnswer | null }>(
      await this.dataSource.query(`DELETE FROM mcp_elicitations WHERE request_id = $1 RETURNING answer`, [requestId]),
    );
    return rows[0]?.answer ?? undefined;
  }
}
