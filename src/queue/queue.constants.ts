export type QueueBackendKind = 'redis' | 'postgres';

/** A queue that always exists, so the backend is migrated and health can probe it. */
export const SYSTEM_QUEUE = 'atrium-system';

/**
 * How long an idle worker blocks before looking again. Over the embedded database LISTEN/NOTIFY
 * does not cross connections, so workers poll; one second keeps job start latency under a second.
 */
export const WORKER_DRAIN_DELAY_SECONDS = 1;

/**
 * How long a worker waits before fetching again after its connection failed (BullMQ's default is 15 s).
 * After a database or Redis outage, queued work resumes within about a second of the dependency's return.
 */
export const WORKER_RUN_RETRY_DELAY_MS = 1000;
