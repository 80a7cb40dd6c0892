import { IDLE_SHARE, IndexingPacer } from './indexing-pacer';
import { SharedRequestLoad } from './shared-request-load';

/** A reader over a fake `api_busy_shares`: `next` is what the next read returns (a share, null for none, or an error). */
function reader(next: number | null | Error) {
  const state = { next, reads: 0, now: 0 };
  const load = new SharedRequestLoad(
    {
      highestFresh: () => {
        state.reads += 1;
        return state.next instanceof Error ? Promise.reject(state.next) : Promise.resolve(state.next);
      },
    },
    () => state.now,
  );
  return { state, load, pacer: new IndexingPacer(0.5, 16, 256, load) };
}

describe('SharedRequestLoad', () => {
  it('paces before its first read', () => {
    const { pacer } = reader(0);
    expect(pacer.busy()).toBe(true);
    expect(pacer.batchChunks()).toBe(16);
  });

  it('runs at full speed while the API reports idle', async () => {
    const { load, pacer } = reader(IDLE_SHARE / 2);
    await load.refresh();
    expect(pacer.busy()).toBe(false);
    expect([pacer.batchChunks(), pacer.batchChunks(), pacer.batchChunks()]).toEqual([32, 64, 128]);
    expect(pacer.pauseAfter(40)).toBe(0);
  });

  it('paces while an API instance reports busy', async () => {
    const { load, pacer } = reader(IDLE_SHARE);
    await load.refresh();
    expect(pacer.busy()).toBe(true);
    expect(pacer.batchChunks()).toBe(16);
    expect(pacer.pauseAfter(40)).toBe(40);
  });

  it('paces when no API instance reported lately', async () => {
    const { load, pacer } = reader(null);
    await load.refresh();
    expect(load.serving).toBe(false);
    expect(pacer.batchChunks()).toBe(16);
    expect(pacer.pauseAfter(40)).toBe(40);
  });

  it('paces without throwing when the read fails, and reads again a period later, not at every batch', async () => {
    const { state, load, pacer } = reader(0);
    await load.refresh();
    expect(pacer.busy()).toBe(false);
    state.next = new Error('connection refused');
    state.now = 1500;
    await expect(load.refresh()).resolves.toBeUndefined();
    const reads = state.reads;
    expect(pacer.busy()).toBe(true);
    expect(pacer.batchChunks()).toBe(16);
    expect(state.reads).toBe(reads);
    state.next = 0;
    state.now = 2600;
    pacer.busy(); // starts the next read
    await load.refresh();
    expect(pacer.busy()).toBe(false);
  });

  it('reads at most once per second however often the pacer asks', async () => {
    const { state, load, pacer } = reader(0);
    await load.refresh();
    for (let i = 0; i < 50; i++) pacer.batchChunks();
    expect(state.reads).toBe(1);
    state.now = 1000;
    pacer.batchChunks();
    pacer.batchChunks();
    await load.refresh();
    expect(state.reads).toBe(2);
  });

  it('stops trusting a read that is not renewed (the database slow since)', async () => {
    const { state, load, pacer } = reader(0);
    await load.refresh();
    state.next = 0;
    // The renewal hangs: the last read ages out and the pacer paces.
    (load as unknown as { reading: Promise<void> }).reading = new Promise(() => undefined);
    state.now = 3500;
    expect(pacer.busy()).toBe(true);
  });
});
