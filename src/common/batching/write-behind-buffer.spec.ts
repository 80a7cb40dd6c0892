import { WriteBehindBuffer } from './write-behind-buffer.js';

function buffer(write: (batch: number[]) => Promise<void>, maxBuffered = 1000) {
  const errors: number[] = [];
  const b = new WriteBehindBuffer<number>({
    write,
    onError: (_e, dropped) => errors.push(dropped),
    flushEveryMs: 60_000,
    batchSize: 3,
    maxBuffered,
  });
  return { b, errors };
}

describe('WriteBehindBuffer', () => {
  it('writes in batches of at most batchSize, in order, on flush', async () => {
    const written: number[][] = [];
    const { b } = buffer(async (batch) => void written.push(batch));
    for (let i = 1; i <= 7; i++) b.add(i);
    await b.flush();
    expect(written.flat()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(written.every((batch) => batch.length <= 3)).toBe(true);
  });

  it('keeps a batch whose write failed and writes it on the next flush, once', async () => {
    const written: number[] = [];
    let fail = true;
    const { b, errors } = buffer(async (batch) => {
      if (fail) throw new Error('database down');
      written.push(...batch);
    });
    b.add(1);
    b.add(2);
    await b.flush();
    expect([written, errors]).toEqual([[], [0]]);
    fail = false;
    await b.flush();
    await b.flush();
    expect(written).toEqual([1, 2]);
  });

  it('drops the oldest entries past maxBuffered while the writes fail', async () => {
    const { b, errors } = buffer(async () => {
      throw new Error('down');
    }, 2);
    b.add(1);
    b.add(2);
    b.add(3);
    await b.flush();
    expect(errors).toContain(1);
  });
});
