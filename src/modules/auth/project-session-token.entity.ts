import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

export type ProjectTokenRole = 'editor' | 'viewer';

/** A project session token (`atp_…`). Only the HMAC of the token is stored; the plaintext is shown once. */
@Entity({ name: 'project_session_tokens' })
export class ProjectSessionToken {
  @PrimaryColumn('uuid')
  id: string;

  @Column('uuid')
  projectId: string;

  /** The user who minted it; the token acts as this user. */
  @Column('uuid')
  createdBy: string;

  @Column('varchar')
  name: string;

  @Column('varchar')
  role: ProjectTokenRole;

  @Column('char', { select: false })
  tokenHash: string;

  @Column({ type: 'timestamptz' })
  expiresAt: Date;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}
