import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { UserRole } from './principal.js';

@Entity({ name: 'users' })
export class User {
  @PrimaryColumn('uuid')
  id: string;

  @Column('varchar')
  email: string;

  @Column('varchar')
  name: string;

  /** scrypt hash with its parameters; never leaves the service. */
  @Column('varchar', { select: false })
  passwordHash: string;

  @Column('varchar')
  role: UserRole;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

export interface UserView {
  id: string;
  email: string;
  name: string;
  role: UserRole;
  createdAt: string;
}

export function toUserView(user: User): UserView {
  return { id: user.id, email: user.email, name: user.name, role: user.role, createdAt: user.createdAt.toISOString() };
}
