import { DatabasePool } from '../../database/database-pool.js';
import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { PgChannelListener } from '../../database/pg-channel-listener.js';

/** The channel the `agent_run_events_record` trigger notifies (payload: the run id) when a run's events grow. */
const CHANNEL = 'agent_run_events';

/** Wakes the open run streams of this process when their run's events grew (see PgChannelListener). */
@Injectable()
export class AgentRunEventsListener extends PgChannelListener implements OnModuleDestroy {
  constructor(database: DatabasePool) {
    super(database, CHANNEL);
  }
}
