import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseProbeRepository } from './database-probe.repository.js';
import { DependencyChecksService } from './dependency-checks.service.js';
import { HealthController } from './health.controller.js';
import { ShutdownState } from './shutdown-state.js';

@Global()
@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [DatabaseProbeRepository, DependencyChecksService, ShutdownState],
  exports: [ShutdownState, DependencyChecksService],
})
export class HealthModule {}
