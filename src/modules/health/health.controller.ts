import { Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { Public } from '../auth/guards/public.decorator.js';
import { DependencyChecksService } from './dependency-checks.service.js';
import { ShutdownState } from './shutdown-state.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { HealthSchema, ReadySchema } from './health.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';

@ApiTags('health')
@Public()
@BackendController('api')
export class HealthController {
  private readonly startedAt = Date.now();

  constructor(
    private readonly checks: DependencyChecksService,
    private readonly shutdown: ShutdownState,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get('health')
  @ApiOperation({ summary: 'Liveness: 200 while the process serves, with each dependency checked' })
  @ApiData(200, HealthSchema, 'Up (status ok) or degraded (a dependency is down, or draining)')
  async health() {
    const checks = await this.checks.runAll();
    const allUp = Object.values(checks).every((check) => check.status === 'up');
    return {
      status: allUp && !this.shutdown.draining ? 'ok' : 'degraded',
      checks,
      version: this.config.version,
      uptimeSeconds: Math.round((Date.now() - this.startedAt) / 1000),
    };
  }

  @Get('ready')
  @ApiOperation({ summary: 'Readiness: 200 when every dependency passes, 503 otherwise or while shutting down' })
  @ApiData(200, ReadySchema, 'Every dependency is up')
  @ApiErrors(503)
  async ready() {
    if (this.shutdown.draining) {
      throw new AppException(ErrorCode.DependencyUnavailable, 'Shutting down', { draining: true });
    }
    const checks = await this.checks.runAll();
    const down = Object.entries(checks).filter(([, check]) => check.status === 'down');
    if (down.length > 0) {
      throw new AppException(
        ErrorCode.DependencyUnavailable,
        `Not ready: ${down.map(([name]) => name).join(', ')} down`,
        { checks },
      );
    }
    return { status: 'ready', checks };
  }
}
