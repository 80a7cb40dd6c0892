// First: tracing must start before the modules it instruments are loaded (see the file).
import './common/tracing/tracing.preload.js';
import 'reflect-metadata';
import { exitWithError, installProcessLogger } from './common/logging/process-logger.js';
import { start } from './main.js';

/** `node dist/src/worker.js`: the same app as main.ts with APP_ROLE=worker (queue processors, no HTTP). */
start({ role: 'worker' }).catch((error: unknown) => exitWithError(installProcessLogger(), 'Start-up failed', error, 1));
