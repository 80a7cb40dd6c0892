import { actorFor, idempotencyKeySpace, CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Get, Headers, HttpCode, Param, Post } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import { RequestContext } from '../../common/request-context/request-context.js';
import { AllowProjectToken } from '../auth/guards/allow-project-token.decorator.js';
import { IndexingRequestDto } from './dto/indexing-request.dto.js';
import { SearchDto } from './dto/search.dto.js';
import { IndexingJobsService, type IndexingJobKind } from './indexing-jobs.service.js';
import { RagSearchService } from './rag-search.service.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { IndexingJobSchema, IndexingJobStartedSchema, SearchResultSchema } from './rag.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';

@ApiTags('rag')
@AllowProjectToken()
@BackendController('api/rag')
export class RagController {
  constructor(
    private readonly search: RagSearchService,
    private readonly jobs: IndexingJobsService,
    private readonly idempotency: IdempotencyService,
  ) {}

  @Post('search')
  @HttpCode(200)
  @ApiOperation({ summary: 'Hybrid / vector / keyword search over the chunks of documents the caller may see' })
  @ApiData(200, SearchResultSchema, 'Best chunks first')
  @ApiErrors(404, 502)
  async searchChunks(@CurrentCaller() caller: Caller, @Body() body: SearchDto) {
    return this.search.search(actorFor(caller, body.projectId), {
      query: body.query,
      projectId: body.projectId,
      topK: body.topK ?? 5,
      mode: body.mode ?? 'hybrid',
      documentIds: body.documentIds,
    });
  }

  @Post('ingest')
  @HttpCode(202)
  @ApiHeader({ name: 'Idempotency-Key', required: false })
  @ApiOperation({
    summary: 'Index documents of a project (editor or owner); default: those not indexed at their current content',
  })
  @ApiData(202, IndexingJobStartedSchema, 'Queued')
  @ApiErrors(403, 404, 409)
  ingest(@CurrentCaller() caller: Caller, @Body() body: IndexingRequestDto, @Headers('idempotency-key') key?: string) {
    return this.start('ingest', caller, body, key);
  }

  @Post('reindex')
  @HttpCode(202)
  @ApiHeader({ name: 'Idempotency-Key', required: false })
  @ApiOperation({ summary: 'Rebuild chunks and vectors of a project; one at a time per project (409 otherwise)' })
  @ApiData(202, IndexingJobStartedSchema, 'Queued')
  @ApiErrors(403, 404, 409)
  reindex(@CurrentCaller() caller: Caller, @Body() body: IndexingRequestDto, @Headers('idempotency-key') key?: string) {
    return this.start('reindex', caller, body, key);
  }

  @Get('ingest/:jobId')
  @ApiOperation({ summary: 'An indexing job (ingest or reindex): status, progress, per-document errors' })
  @ApiData(200, IndexingJobSchema, 'The job')
  @ApiErrors(404)
  getJob(@CurrentCaller() caller: Caller, @Param('jobId') jobId: string) {
    return this.jobs.get(actorFor(caller), jobId);
  }

  @Post('ingest/:jobId/cancel')
  @HttpCode(202)
  @ApiOperation({ summary: 'Cancel a queued or running indexing job; a finished one is 409 STATE_CONFLICT' })
  @ApiData(202, IndexingJobSchema, 'The job, cancelled or cancelling')
  @ApiErrors(403, 404, 409)
  cancel(@CurrentCaller() caller: Caller, @Param('jobId') jobId: string) {
    return this.jobs.cancel(actorFor(caller), jobId);
  }

  private async start(kind: IndexingJobKind, caller: Caller, body: IndexingRequestDto, key: string | undefined) {
    const actor = actorFor(caller, body.projectId);
    const outcome = await this.idempotency.runAuthorized({
      ownerId: actor.userId,
      scope: idempotencyKeySpace(caller, `rag:${kind}`),
      key,
      request: { projectId: body.projectId, documentIds: body.documentIds ?? null },
      authorize: () => this.jobs.plan(actor, kind, body.projectId, body.documentIds),
      work: async (plan) => {
        const job = await this.jobs.start(actor, plan, RequestContext.requestId());
        return { jobId: job.jobId, status: job.status, kind, documentCount: job.documentCount };
      },
    });
    return outcome.value;
  }
}
