import { Injectable, Logger } from '@nestjs/common';
import { WriteBehindRecorder } from '../../common/batching/write-behind-recorder.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { ToolCredentialsRepository, type ToolCredentialUsage } from './tool-credentials.repository.js';

const logger = new Logger('ApiKeyUsage');

/**
 * The usage log of API keys and OAuth grants (tool, status, duration of each call), written behind in small batches because the
 * final status is only known once the answer is sent. The call count is not kept here: the key lookup
 * commits it before the call is answered (ApiKeyCallCounterService), so it is exact across
 * instances and survives a crash. Flushed every 200 ms, at 500 entries, before a key's usage is read
 * on this instance, and on shutdown; a crash can lose at most the last 200 ms of log rows.
 */
@Injectable()
export class ApiKeyUsageRecorder extends WriteBehindRecorder<ToolCredentialUsage> {
  constructor(@InjectDb() db: Db, credentials: ToolCredentialsRepository) {
    super({
      // One transaction: a retry after a failure must not write one kind's rows twice.
      write: (batch) => db.transaction().execute((trx) => credentials.insertUsage(batch, trx)),
      onError: (error) =>
        logger.warn({ msg: 'Could not write API key usage; will retry', error: (error as Error).message }),
      flushEveryMs: 200,
      batchSize: 500,
      maxBuffered: Number.MAX_SAFE_INTEGER,
    });
  }
}
