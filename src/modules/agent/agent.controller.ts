import { CurrentCaller, type Caller, actorFor, idempotencyKeySpace } from '../../common/auth/caller.js';
import { Body, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { bearerToken } from '../auth/guards/backend-auth.guard.js';
import { ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { IdempotencyService } from '../../common/idempotency/idempotency.service.js';
import { AllowProjectToken } from '../auth/guards/allow-project-token.decorator.js';
import { AgentRunStreamService } from './agent-run-stream.service.js';
import { AgentRunsService, deciderOf } from './agent-runs.service.js';
import { AgentHistoryQueryDto } from './dto/agent-history-query.dto.js';
import { ApproveStepDto } from './dto/approve-step.dto.js';
import { ExecuteAgentDto } from './dto/execute-agent.dto.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { page } from '../../common/openapi/openapi-schema.js';
import { AgentRunSchema, AgentRunStartedSchema, AgentRunStateSchema, AgentRunSummarySchema } from './agent.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';
import { DEFAULT_AGENT_RUN_APPROVAL } from './agent-run.types.js';

@ApiTags('agent')
@AllowProjectToken()
@BackendController('api/agent')
export class AgentController {
  constructor(
    private readonly runs: AgentRunsService,
    private readonly idempotency: IdempotencyService,
    private readonly streams: AgentRunStreamService,
  ) {}

  @Post('execute')
  @HttpCode(202)
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'A repeat with the same key and body within 24 h returns the first run',
  })
  @ApiOperation({ summary: 'Start an agent run in a project (any member; viewers get read-only tools)' })
  @ApiData(
    202,
    AgentRunStartedSchema,
    'Queued (with webhookSecret when a webhookUrl was given; Cache-Control: no-store then)',
  )
  @ApiErrors(403, 404, 409)
  async execute(
    @CurrentCaller() caller: Caller,
    @Body() body: ExecuteAgentDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ) {
    const actor = actorFor(caller, body.projectId);
    const input = {
      projectId: body.projectId,
      input: body.input,
      tools: body.tools,
      maxSteps: body.maxSteps,
      approval: body.approval,
      webhookUrl: body.webhookUrl,
    };
    // The webhook secret is shown once: kept out of the idempotency record, so a replay answers without it.
    let webhookSecret: string | undefined;
    const outcome = await this.idempotency.runAuthorized({
      ownerId: actor.userId,
      scope: idempotencyKeySpace(caller, 'agent:execute'),
      key: idempotencyKey,
      request: {
        ...input,
        tools: body.tools ?? null,
        maxSteps: body.maxSteps ?? 8,
        approval: body.approval ?? DEFAULT_AGENT_RUN_APPROVAL,
        webhookUrl: body.webhookUrl ?? null,
      },
      authorize: () => this.runs.plan(actor, input),
      work: async (plan) => {
        const { webhookSecret: secret, ...started } = await this.runs.start(actor, plan);
        webhookSecret = secret;
        return started;
      },
    });
    if (!webhookSecret) return outcome.value;
    response.setHeader('Cache-Control', 'no-store');
    return { ...outcome.value, webhookSecret };
  }

  @Get('status/:jobId')
  @ApiOperation({ summary: 'One of your runs, with its steps so far' })
  @ApiData(200, AgentRunSchema, 'The run')
  @ApiErrors(404)
  status(@CurrentCaller() caller: Caller, @Param('jobId') jobId: string) {
    return this.runs.get(actorFor(caller), jobId);
  }

  @Get('stream/:jobId')
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this event id' })
  @ApiOperation({
    summary: 'Server-Sent Events of one of your runs: step, status, then done; a finished run replays and closes',
  })
  @ApiResponse({
    status: 200,
    description:
      'text/event-stream: `event: step` (a step as in status), `event: status` ({status}), `event: done` (the final status view); each with an id. When the credential that opened it expires or is revoked: `event: closed` ({reason: "credential_expired" | "credential_revoked"}) and the stream ends',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiErrors(404)
  async stream(
    @CurrentCaller() caller: Caller,
    @Param('jobId') jobId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    // The guard accepted this bearer token; the stream keeps checking it and ends when it expires or is revoked.
    await this.streams.stream(actorFor(caller), jobId, lastEventId, response, bearerToken(request) ?? '');
  }

  @Post('cancel/:jobId')
  @HttpCode(202)
  @ApiOperation({
    summary:
      "Cancel a queued, running or waiting run (needs the editor role in its project, a project token's role capping it); a finished one is a 409",
  })
  @ApiData(202, AgentRunStateSchema, 'Cancelled, or cancelling (the run ends cancelled)')
  @ApiErrors(403, 404, 409)
  cancel(@CurrentCaller() caller: Caller, @Param('jobId') jobId: string) {
    return this.runs.cancel(actorFor(caller), deciderOf(caller), jobId);
  }

  @Post('approve/:jobId')
  @HttpCode(202)
  @ApiOperation({
    summary:
      "Approve (optionally with edited arguments) or reject the write call a run waits on (needs the editor role in its project, a project token's role capping it); the run resumes",
  })
  @ApiData(
    202,
    AgentRunStateSchema,
    'The decision is recorded (on the step as decidedBy, and in the audit log); the run goes on',
  )
  @ApiErrors(400, 403, 404, 409)
  approve(@CurrentCaller() caller: Caller, @Param('jobId') jobId: string, @Body() body: ApproveStepDto) {
    return this.runs.approve(actorFor(caller), deciderOf(caller), jobId, body);
  }

  @Get('history')
  @ApiOperation({ summary: 'Your runs, newest first' })
  @ApiData(200, page(AgentRunSummarySchema), 'A page of runs (without steps)')
  history(@CurrentCaller() caller: Caller, @Query() query: AgentHistoryQueryDto) {
    return this.runs.history(actorFor(caller, query.projectId), query);
  }
}
