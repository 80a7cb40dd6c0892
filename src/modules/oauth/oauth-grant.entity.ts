import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** One user's authorisation of one OAuth client: the scopes and pins chosen at consent. Tokens hang off it. */
@Entity({ name: 'oauth_grants' })
export class OAuthGrant {
  @PrimaryColumn('uuid')
  id: string;

  @Column('uuid')
  userId: string;

  @Column('text')
  clientId: string;

  @Column('varchar')
  clientName: string;

  @Column('text')
  redirectUri: string;

  @Column('text')
  resource: string;

  @Column('text', { array: true })
  scopes: string[];

  @Column('uuid', { array: true, nullable: true })
  projectIds: string[] | null;

  @Column('text', { array: true, nullable: true })
  repos: string[] | null;

  /** Write tools called with this grant are confirmed with the user first (MCP elicitation). */
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

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
