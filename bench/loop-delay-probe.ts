/**
 * Preloaded into a bench's server (`node --require …/loop-delay-probe.js`, with an IPC channel): the event loop's
 * delay histogram and the garbage collector's pauses of the process that serves HTTP, read and reset over the IPC
 * channel at the end of each phase or round, so a p99 can be told apart into "the loop was busy", "the collector
 * stopped it" and "the cores were busy". bench:ingest loads it with BENCH_LOOP_DELAY=1, bench:gateway always.
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

/** What the probe answers to the message 'loop-delay' (milliseconds), then starts over. */
export interface LoopDelayReport {
  loopDelay: { p50: number; p99: number; max: number; samples: number };
  gc: { pauses: number; totalMs: number; maxMs: number };
}

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();

let gc = { pauses: 0, totalMs: 0, maxMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.pauses += 1;
    gc.totalMs += entry.duration;
    gc.maxMs = Math.max(gc.maxMs, entry.duration);
  }
}).observe({ entryTypes: ['gc'] });

process.on('message', (message: unknown) => {
  if (message !== 'loop-delay') return;
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  const report: LoopDelayReport = {
    loopDelay: {
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
      samples: histogram.count,
    },
    gc: { pauses: gc.pauses, totalMs: Math.round(gc.totalMs * 10) / 10, maxMs: Math.round(gc.maxMs * 10) / 10 },
  };
  process.send?.(report);
  histogram.reset();
  gc = { pauses: 0, totalMs: 0, maxMs: 0 };
});
// The channel must not keep a server that is asked to stop alive.
process.channel?.unref();
