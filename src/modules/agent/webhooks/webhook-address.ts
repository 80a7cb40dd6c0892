import { AppException } from '../../../common/errors/app.exception.js';
import {
  checkOutboundUrlResolving,
  OutboundUrlError,
  type OutboundPolicy,
} from '../../../common/net/outbound-guard.js';

export function webhookPolicy(allowPrivate: boolean): OutboundPolicy {
  return { allowPrivate, label: 'webhookUrl' };
}

/**
 * 400 unless the webhook URL passes the outbound guard (`https`, a public address unless WEBHOOK_ALLOW_PRIVATE=true).
 * Deliveries check again at connect time (`guardedLookup`), so DNS rebinding after this check is refused too.
 */
export async function assertWebhookUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  try {
    return await checkOutboundUrlResolving(raw, webhookPolicy(allowPrivate));
  } catch (error) {
    if (error instanceof OutboundUrlError)
      throw AppException.validation(error.message, [{ field: 'webhookUrl', message: error.message }]);
    throw error;
  }
}
