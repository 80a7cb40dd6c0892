import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { ProjectAccess } from './project-access.js';
import { TasksService } from './tasks.service.js';
import { TasksToolProvider } from './tasks.tool-provider.js';

@Module({
  imports: [AuthModule],
  providers: [TasksService, ProjectAccess, TasksToolProvider],
  exports: [TasksService],
})
export class TasksModule {}
