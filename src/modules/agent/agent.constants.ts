/** BullMQ queue carrying "run agent run X"; the `agent_runs` row is the truth users read. */
export const AGENT_RUNS_QUEUE = 'agent-runs';

/** How often a running run re-reads its row (cancel flag, ownership) and refreshes its heartbeat. */
export const CANCEL_POLL_MS = 250;
export const HEARTBEAT_EVERY_MS = 2_000;

/** A run interrupted this many times (its worker died each time) is failed instead of resumed again. */
export const MAX_RUN_ATTEMPTS = 3;

/** What a tool result may occupy in the conversation sent back to the model. */
export const TOOL_RESULT_MAX_CHARS = 12_000;
export const RESULT_SUMMARY_MAX_CHARS = 200;
