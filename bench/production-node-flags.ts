import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The Node flags the Dockerfile's CMD (and `npm start`) starts the service with (the heap settings), so a bench runs
 * the server the way users do. BENCH_NODE_FLAGS (space-separated, may be empty) replaces them, to measure the flags
 * themselves. Read from the Dockerfile beside dist/ (this file runs as dist/bench/production-node-flags.js).
 */
export function productionNodeFlags(): string[] {
  const override = process.env.BENCH_NODE_FLAGS;
  if (override !== undefined) return override.split(' ').filter(Boolean);
  const cmd = readFileSync(join(__dirname, '..', '..', 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('CMD '))
    .pop();
  const args = cmd ? (JSON.parse(cmd.slice(4)) as string[]) : [];
  return args[0] === 'node' ? args.slice(1).filter((arg) => arg.startsWith('--')) : [];
}

/** Where the flags of a bench's server came from, for its output. */
export function nodeFlagsSource(): string {
  return process.env.BENCH_NODE_FLAGS === undefined ? "the Dockerfile CMD's flags" : 'BENCH_NODE_FLAGS';
}
