import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'api_keys' })
export class ApiKey {
  @PrimaryColumn('uuid')
  id: string;

  @Column('uuid')
  userId: string;

  @Column('varchar')
  name: string;

  @Column('text', { array: true })
  scopes: string[];

  /** First 8 chars after `atr_`, for display only. */
  @Column('varchar')
  prefix: string;

  /** HMAC-SHA256(pepper, key). The key itself is never stored. */
  @Column('bytea', { select: false })
  keyHash: Buffer;

  @Column('uuid', { array: true, nullable: true })
  projectIds: string[] | null;

  @Column('text', { array: true, nullable: true })
  repos: string[] | null;

  /** Write tools called with this key are confirmed with the user first (MCP elicitation). */
  @Column('boolean')
  confirmWrites: boolean;

  @Column('timestamptz', { nullable: true })
  expiresAt: Date | null;

  @Column('timestamptz', { nullable: true })
  revokedAt: Date | null;

  @Column('timestamptz', { nullable: true })
  lastUsedAt: Date | null;

  /** bigint arrives as a string from pg. */
  @Column('bigint')
  callCount: string;

  // Milliseconds, the precision of the list cursor (see migration ListTimestampsMilliseconds).
  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
