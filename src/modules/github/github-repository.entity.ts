import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A repository an admin registered; the GitHub tools only ever reach these. */
@Entity({ name: 'github_repositories' })
export class GithubRepository {
  @PrimaryColumn('uuid')
  id: string;

  @Column('varchar')
  owner: string;

  @Column('varchar')
  name: string;

  /** `owner/name` as GitHub spells it; unique case-insensitively. */
  @Column('varchar')
  fullName: string;

  /** bigint comes back from pg as a string; GitHub ids exceed 2^31. */
  @Column('bigint')
  githubId: string;

  @Column('varchar')
  defaultBranch: string;

  @Column('text', { nullable: true })
  description: string | null;

  @Column('boolean')
  isPrivate: boolean;

  /** AES-256-GCM envelope from TokenCipher; null = use the server's GITHUB_TOKEN. Never selected by default. */
  @Column('text', { nullable: true, select: false })
  tokenCiphertext: string | null;

  @Column('uuid', { nullable: true })
  createdBy: string | null;

  // Milliseconds, the precision of the list cursor (see migration ListTimestampsMilliseconds).
  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
