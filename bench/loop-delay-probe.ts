/**
 * Preloaded into the server by bench:ingest when BENCH_LOOP_DELAY=1 (`node --require …/loop-delay-probe.js`):
 * the event loop's delay histogram of the process that serves HTTP, read and reset over the IPC channel at the
 * end of each phase, so a phase's stream p99 can be told apart into "the loop was busy" and "the cores were".
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();

process.on('message', (message: unknown) => {
  if (message !== 'loop-delay') return;
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  process.send?.({
    loopDelay: {
      p50: ms(histogram.percentile(50)),
      p99: ms(histogram.percentile(99)),
      max: ms(histogram.max),
      samples: histogram.count,
    },
  });
  histogram.reset();
});
// The channel must not keep a server that is asked to stop alive.
process.channel?.unref();
