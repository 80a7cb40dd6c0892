/**
 * What the pacer reads: how busy the HTTP side is. In a serving process its own gauge
 * (src/common/http/http-activity.ts); in a worker-only one what the API instances publish (SharedRequestLoad).
 */
export interface RequestLoad {
  /** False when the API's load cannot be seen (no fresh report reaches a worker-only process): the pacer paces. */
  readonly serving: boolean;
  /** Share (0..1) of the last second spent serving requests. */
  busyShare(): number;
}

/**
 * Below this share of the last second spent serving requests the HTTP side counts as idle: a client polling a
 * document's status a few times a second stays under it, a steady stream of calls (even of fast ones) does not.
 */
export const IDLE_SHARE = 0.1;

/** The RequestLoad the chunk writer's pacers read (chosen by APP_ROLE in RagModule). */
export const REQUEST_LOAD = Symbol('REQUEST_LOAD');

/**
 * Paces the batches of a large document by the requests this process serves. While none are (below IDLE_SHARE),
 * the document is written at full speed: batches double up to the largest, with no pause. While requests are
 * served, batches are short (`pacedChunks`) and each is followed by a pause that keeps the document's work to
 * `dutyCycle` of the wall time, so every request meets at most a short statement and finds a core free half of
 * the time. A worker-only process reads the API instances' published shares instead; while it cannot see any
 * (none published lately, or the database does not answer) it paces, as all large documents were before.
 */
export class IndexingPacer {
  private fullChunks: number;

  constructor(
    private readonly dutyCycle: number,
    private readonly pacedChunks: number,
    private readonly maxChunks: number,
    private readonly load: RequestLoad,
  ) {
    this.fullChunks = pacedChunks;
  }

  /** True while requests are served (or this process cannot see them). */
  busy(): boolean {
    return !this.load.serving || this.load.busyShare() >= IDLE_SHARE;
  }

  /** Most chunks for the next batch: short while requests are served, else doubling from the short size. */
  batchChunks(): number {
    if (this.busy()) {
      // Starts short again, so requests that arrive later meet a short batch rather than the largest.
      this.fullChunks = this.pacedChunks;
      return this.pacedChunks;
    }
    this.fullChunks = Math.min(this.maxChunks, this.fullChunks * 2);
    return this.fullChunks;
  }

  /** Milliseconds to pause after a batch that worked `workMs`: none while idle, else what the duty cycle leaves. */
  pauseAfter(workMs: number): number {
    if (this.dutyCycle >= 1 || !this.busy()) return 0;
    return (workMs * (1 - this.dutyCycle)) / this.dutyCycle;
  }
}
