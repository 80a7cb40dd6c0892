import { IDLE_SHARE, IndexingPacer, type RequestLoad } from './indexing-pacer';

function load(serving: boolean, share: number): RequestLoad & { share: number } {
  return {
    serving,
    share,
    busyShare() {
      return this.share;
    },
  };
}

describe('IndexingPacer', () => {
  it('works at full speed while no requests are served: batches double to the largest, no pause', () => {
    const pacer = new IndexingPacer(0.5, 16, 256, load(true, 0));
    expect([1, 2, 3, 4, 5].map(() => pacer.batchChunks())).toEqual([32, 64, 128, 256, 256]);
    expect(pacer.pauseAfter(100)).toBe(0);
  });

  it('paces while requests are served: short batches, a pause for the duty cycle, and starts short again', () => {
    const requests = load(true, 0);
    const pacer = new IndexingPacer(0.5, 16, 256, requests);
    pacer.batchChunks();
    pacer.batchChunks();
    requests.share = IDLE_SHARE;
    expect(pacer.batchChunks()).toBe(16);
    expect(pacer.pauseAfter(40)).toBe(40);
    requests.share = IDLE_SHARE / 2;
    expect(pacer.batchChunks()).toBe(32);
    expect(new IndexingPacer(0.25, 16, 256, load(true, 0.9)).pauseAfter(30)).toBe(90);
  });

  it('paces always in a process that serves no requests, and never at a duty cycle of 1', () => {
    const worker = new IndexingPacer(0.5, 16, 256, load(false, 0));
    expect(worker.batchChunks()).toBe(16);
    expect(worker.pauseAfter(50)).toBe(50);
    expect(new IndexingPacer(1, 16, 256, load(false, 0)).pauseAfter(50)).toBe(0);
  });
});
