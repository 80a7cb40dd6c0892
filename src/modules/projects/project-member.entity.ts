import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { ProjectRole } from './project-role.js';

@Entity({ name: 'project_members' })
export class ProjectMember {
  @PrimaryColumn('uuid')
  projectId: string;

  @PrimaryColumn('uuid')
  userId: string;

  @Column('varchar')
  role: ProjectRole;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}
