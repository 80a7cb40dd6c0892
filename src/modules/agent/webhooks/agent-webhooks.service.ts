import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { createHmac, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AppConfig } from '../../../config/app-config.js';
import { APP_CONFIG } from '../../../config/app-config.token.js';
import { TokenCipher } from '../../github/token-cipher.js';
import { AgentWebhookDeliveriesRepository, type WebhookDelivery } from './agent-webhook-deliveries.repository.js';
import { checkOutboundUrl, guardedLookup } from '../../../common/net/outbound-guard.js';
import { webhookPolicy } from './webhook-address.js';
import { redactJsonText } from '../../../common/secrets/secret-redactor.js';

export const AGENT_WEBHOOKS_QUEUE = 'agent-webhooks';
/** How often a worker hands new deliveries to the queue. */
const DISPATCH_EVERY_MS = 500;

export interface WebhookDeliveryView {
  deliveryId: string;
  type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  occurredAt: string;
  deliveredAt: string | null;
}

/**
 * Run webhooks: the secret (made here, shown once, stored encrypted), the signature, the dispatcher that hands
 * the trigger-created deliveries to the `agent-webhooks` queue, and one delivery attempt (the queue retries it
 * with exponential backoff until WEBHOOK_MAX_ATTEMPTS). At least once: a receiver de-duplicates on
 * `Atrium-Delivery-Id`.
 */
@Injectable()
export class AgentWebhooksService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AgentWebhooksService.name);
  private timer?: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly deliveriesRepository: AgentWebhookDeliveriesRepository,
    @InjectQueue(AGENT_WEBHOOKS_QUEUE) private readonly queue: Queue,
    private readonly cipher: TokenCipher,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.role === 'api') return;
    this.timer = setInterval(() => void this.dispatch(), DISPATCH_EVERY_MS);
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  newSecret(): string {
    return `whsec_${randomBytes(32).toString('base64url')}`;
  }

  sealSecret(secret: string, runId: string): string {
    return this.cipher.encrypt(secret, `agent-run-webhook:${runId}`);
  }

  /** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
  static signature(secret: string, body: string, at: number): string {
    return `t=${at},v1=${createHmac('sha256', secret).update(`${at}.${body}`).digest('hex')}`;
  }

  async deliveries(runId: string): Promise<WebhookDeliveryView[]> {
    return (await this.deliveriesRepository.forRun(runId)).map(toDeliveryView);
  }

  /** Hands new deliveries to the queue (job id = delivery id, so a repeat adds nothing). */
  async dispatch(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (const { id, userId } of await this.deliveriesRepository.notEnqueued(100)) {
        await this.queue.add(
          'deliver',
          { deliveryId: id, userId },
          {
            jobId: id,
            attempts: this.config.agent.webhookMaxAttempts,
            backoff: { type: 'exponential', delay: this.config.agent.webhookRetryBaseMs },
            removeOnComplete: 1000,
            removeOnFail: 1000,
          },
        );
        await this.deliveriesRepository.markEnqueued(id);
      }
    } catch (error) {
      this.logger.warn({
        msg: 'webhook dispatch failed; retried shortly',
        error: error instanceof Error ? error.message : String(error),
      });
    } finally {
      this.busy = false;
    }
  }

  /** One attempt. Throws to have the queue retry; records the outcome either way. */
  async deliver(deliveryId: string, lastAttempt: boolean): Promise<void> {
    const row = await this.deliveriesRepository.toSend(deliveryId);
    if (!row || row.status !== 'pending') return;
    const status = row.type.replace(/^agent_run\./, '');
    const final = status !== 'awaiting_approval';
    // The run's output and error were redacted when written; the body is checked again as it leaves.
    const body = redactJsonText(
      JSON.stringify({
        type: row.type,
        jobId: row.runId,
        status,
        output: final ? row.output : null,
        error: final ? row.error : null,
        occurredAt: row.occurredAt.toISOString(),
      }),
      'webhook_body',
    );
    const secret = this.cipher.decrypt(row.sealedSecret, `agent-run-webhook:${row.runId}`);
    let code: number | null = null;
    let failure: string | null = null;
    try {
      code = await this.post(row.webhookUrl, body, {
        'Atrium-Signature': AgentWebhooksService.signature(secret, body, Math.floor(Date.now() / 1000)),
        'Atrium-Delivery-Id': row.id,
      });
      if (code < 200 || code >= 300) failure = `receiver answered ${code}`;
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    }
    await this.deliveriesRepository.recordAttempt(row.id, code, failure, lastAttempt);
    if (failure) throw new Error(failure);
  }

  /**
   * One POST under one overall deadline (WEBHOOK_TIMEOUT_MS: DNS, connection, request and the receiver's status line
   * together, not an idle timeout). Only the status line matters: the socket is destroyed as soon as it arrives, so
   * a receiver that trickles or never ends its body costs nothing more.
   */
  private post(rawUrl: string, body: string, headers: Record<string, string>): Promise<number> {
    const policy = webhookPolicy(this.config.agent.webhookAllowPrivate);
    let url: URL;
    try {
      // An address literal skips `lookup`: the synchronous check covers it; names are checked at connect time.
      url = checkOutboundUrl(rawUrl, policy);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const timeoutMs = this.config.agent.webhookTimeoutMs;
    return new Promise<number>((resolve, reject) => {
      let settled = false;
      const req = send(url, {
        method: 'POST',
        lookup: guardedLookup(policy),
        // A fresh connection per attempt: the socket is destroyed after the status line, never pooled.
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'Atrium-Webhooks/1',
          ...headers,
        },
      });
      const deadline = setTimeout(() => {
        if (settled) return;
        settled = true;
        req.destroy();
        reject(new Error(`no answer within ${timeoutMs} ms (WEBHOOK_TIMEOUT_MS)`));
      }, timeoutMs);
      req.on('response', (res) => {
        clearTimeout(deadline);
        res.destroy(); // the answer's body is never read
        req.destroy();
        if (settled) return;
        settled = true;
        resolve(res.statusCode ?? 0);
      });
      req.on('error', (error) => {
        clearTimeout(deadline);
        if (settled) return;
        settled = true;
        reject(error);
      });
      req.end(body);
    });
  }
}

function toDeliveryView(delivery: WebhookDelivery): WebhookDeliveryView {
  return {
    deliveryId: delivery.id,
    type: delivery.type,
    status: delivery.status,
    attempts: delivery.attempts,
    lastStatusCode: delivery.lastStatusCode,
    lastError: delivery.lastError,
    occurredAt: delivery.occurredAt.toISOString(),
    deliveredAt: delivery.deliveredAt ? delivery.deliveredAt.toISOString() : null,
  };
}
