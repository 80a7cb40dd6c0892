import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ProjectsModule } from '../projects/projects.module.js';
import { TasksRepository } from './tasks.repository.js';
import { TasksService } from './tasks.service.js';
import { TasksToolProvider } from './tasks.tool-provider.js';

@Module({
  // ProjectsModule answers the one question tasks ask about projects: the actor's role in one (membership).
  imports: [AuthModule, ProjectsModule],
  providers: [TasksRepository, TasksService, TasksToolProvider],
  exports: [TasksService],
})
export class TasksModule {}
