import { AsyncLocalStorage } from 'node:async_hooks';

/** Milliseconds per phase name of one traced operation; a phase that runs twice adds up. */
export type PhaseRecord = Map<string, number>;

interface Frame {
  record: PhaseRecord;
  prefix: string;
}

const current = new AsyncLocalStorage<Frame>();

/**
 * Opt-in timings of the phases of one operation, for benches that want to see where its milliseconds go
 * (`BENCH_TRACE=1 npm run bench:rag`). Nothing is recorded unless the caller runs the operation
 * inside `tracePhases`; outside one, {@link phaseClock} and {@link phaseSince} cost an AsyncLocalStorage lookup.
 */
export async function tracePhases<T>(operation: () => Promise<T>): Promise<{ result: T; phases: PhaseRecord }> {
  const record: PhaseRecord = new Map();
  const result = await current.run({ record, prefix: '' }, operation);
  return { result, phases: record };
}

/** Runs `operation` with its phases named `<group>.<phase>` (e.g. the two lists of a hybrid search, which overlap). */
export function phaseGroup<T>(group: string, operation: () => T): T {
  const frame = current.getStore();
  return frame ? current.run({ record: frame.record, prefix: `${frame.prefix}${group}.` }, operation) : operation();
}

/** The start of a phase: the current time when a trace is on, else 0 (and phaseSince ignores it). */
export function phaseClock(): number {
  return current.getStore() ? performance.now() : 0;
}

/** Adds the time since `start` (from phaseClock) to phase `name` of the current trace, if any. */
export function phaseSince(name: string, start: number): void {
  if (start === 0) return;
  addPhase(name, performance.now() - start);
}

/** Adds `ms` to phase `name` of the current trace, if any (also for phases measured elsewhere). */
export function addPhase(name: string, ms: number): void {
  const frame = current.getStore();
  if (!frame) return;
  const key = `${frame.prefix}${name}`;
  frame.record.set(key, (frame.record.get(key) ?? 0) + ms);
}

/** The current trace's record and group prefix, for a callback that runs outside its async context (e.g. a driver's socket events). */
export function currentPhaseFrame(): Frame | undefined {
  return current.getStore();
}
