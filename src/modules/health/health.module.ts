import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DependencyChecksService } from './dependency-checks.service.js';
import { HealthController } from './health.controller.js';
import { ShutdownState } from './shutdown-state.js';

@Global()
@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [DependencyChecksService, ShutdownState],
  exports: [ShutdownState, DependencyChecksService],
})
export class HealthModule {}
