import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { Response } from 'express';
import type { Actor } from '../../common/auth/actor.js';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { AgentRunEventsListener } from './agent-run-events.listener.js';
import { AgentRunEventsRepository } from './agent-run-events.repository.js';
import { AgentRunsRepository } from './agent-runs.repository.js';
import { AgentRunsService } from './agent-runs.service.js';
import { CredentialRegistry } from '../credentials/credential-registry.js';
import { FINAL_STATUSES, toStepView } from './agent-run.types.js';
import { RunStreamSlots, type StreamSlot } from './run-stream-slots.service.js';
import { rateLimited } from '../../common/rate-limit/rate-limiter.service.js';

/** Re-read even without a notification this often (a lost LISTEN connection must not stall a stream). */
const REREAD_EVERY_MS = 2_000;
const PAGE = 500;
/** Retry-After when the per-user stream cap refuses: streams end with their run. */
const STREAM_RETRY_AFTER_SECONDS = 5;

/**
 * `GET /api/agent/stream/:jobId` as Server-Sent Events, from the run's stored event log (agent_run_events,
 * written by a database trigger) and never from a worker's memory: any instance serves any run, and
 * `Last-Event-ID` resumes after the given `seq`. A finished run's stream replays what is left, sends `done`
 * (the final status view, id = last seq + 1) and closes.
 */
@Injectable()
export class AgentRunStreamService implements OnModuleDestroy {
  private readonly logger = new Logger(AgentRunStreamService.name);
  /** Open streams: ended on shutdown so the listener can close (clients resume elsewhere with Last-Event-ID). */
  private readonly open = new Set<() => void>();

  constructor(
    private readonly events: AgentRunEventsRepository,
    private readonly runsRepository: AgentRunsRepository,
    private readonly runs: AgentRunsService,
    private readonly listener: AgentRunEventsListener,
    private readonly credentials: CredentialRegistry,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly slots: RunStreamSlots,
  ) {}

  onModuleDestroy(): void {
    for (const stop of this.open) stop();
  }

  /**
   * Checks visibility first (404 as status does), then streams until the run ends, the client leaves, or the
   * credential `bearer` that opened it expires or is revoked (re-checked every AGENT_STREAM_CREDENTIAL_CHECK_MS).
   */
  async stream(
    actor: Actor,
    jobId: string,
    lastEventId: string | undefined,
    response: Response,
    bearer: string,
  ): Promise<void> {
    await this.runs.get(actor, jobId);
    const slot = await this.slots.acquire(actor.userId);
    if (!slot) {
      const cap = this.config.agent.maxStreamsPerUser;
      throw rateLimited(
        'backend',
        `You have ${cap} run streams open (AGENT_MAX_STREAMS_PER_USER); close one first`,
        STREAM_RETRY_AFTER_SECONDS,
      );
    }
    try {
      await this.serve(jobId, actor, lastEventId, response, bearer, slot);
    } finally {
      slot.release();
    }
  }

  private async serve(
    jobId: string,
    actor: Actor,
    lastEventId: string | undefined,
    response: Response,
    bearer: string,
    slot: StreamSlot,
  ): Promise<void> {
    const credential = await this.credentials.liveness(bearer);
    let after = /^\d{1,9}$/.test(lastEventId?.trim() ?? '') ? Number(lastEventId!.trim()) : 0;

    response.status(200);
    response.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    response.setHeader('Cache-Control', 'no-cache, no-transform');
    response.setHeader('Connection', 'keep-alive');
    response.setHeader('X-Accel-Buffering', 'no'); // nginx: do not buffer the stream
    response.flushHeaders();
    response.write('retry: 2000\n\n');

    let closed = false;
    let wake: (() => void) | undefined;
    const poke = () => wake?.();
    const unsubscribe = this.listener.subscribe(jobId, poke);
    const heartbeat = setInterval(() => {
      response.write(': keep-alive\n\n');
      slot.renew();
    }, this.config.agent.streamHeartbeatMs);
    const reread = setInterval(poke, REREAD_EVERY_MS);
    const stop = () => {
      closed = true;
      poke();
    };
    // The credential's end: a timer at its expiry, and a periodic lookup for a revocation (or a lost user).
    let credentialEnded: 'credential_expired' | 'credential_revoked' | null =
      credential === null ? 'credential_revoked' : null;
    const endForCredential = (reason: 'credential_expired' | 'credential_revoked') => {
      credentialEnded ??= reason;
      stop();
    };
    const expiry = credential
      ? setTimeout(
          () => endForCredential('credential_expired'),
          Math.min(2 ** 31 - 1, Math.max(0, credential.expiresAt.getTime() - Date.now())),
        )
      : undefined;
    const recheck = setInterval(() => {
      this.credentials.liveness(bearer).then(
        (live) =>
          live === null &&
          endForCredential(
            credential && credential.expiresAt.getTime() <= Date.now() ? 'credential_expired' : 'credential_revoked',
          ),
        () => undefined, // a failed lookup (database down) is not a revocation; the next check decides
      );
    }, this.config.agent.streamCredentialCheckMs);
    if (credentialEnded) stop();
    this.open.add(stop);
    response.on('close', stop);
    try {
      while (!closed) {
        // Subscribed before reading: a change committed meanwhile wakes the next wait at once.
        let pending = false;
        wake = () => (pending = true);
        const events = await this.events.after(jobId, after, PAGE);
        for (const event of events) {
          const data = event.type === 'step' ? toStepView(event.data) : event.data;
          response.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`);
          after = event.seq;
        }
        if (events.length === PAGE) continue;
        const run = await this.runsRepository.streamPosition(jobId);
        if (!run) break;
        if (FINAL_STATUSES.includes(run.status) && after >= run.eventSeq) {
          const view = await this.runs.get(actor, jobId);
          response.write(`id: ${run.eventSeq + 1}\nevent: done\ndata: ${JSON.stringify(view)}\n\n`);
          break;
        }
        if (!pending && !closed) await new Promise<void>((resolve) => (wake = resolve));
      }
    } catch (error) {
      // The headers are sent: no error answer is possible any more; the client reconnects with Last-Event-ID.
      this.logger.warn({
        msg: 'run stream stopped on an error',
        runId: jobId,
        error: error instanceof Error ? error.message : String(error),
      });
    } finally {
      if (credentialEnded && !response.writableEnded && !response.destroyed) {
        response.write(`event: closed\ndata: ${JSON.stringify({ reason: credentialEnded })}\n\n`);
      }
      clearTimeout(expiry);
      clearInterval(recheck);
      clearInterval(heartbeat);
      clearInterval(reread);
      unsubscribe();
      this.open.delete(stop);
      response.end();
    }
  }
}
