import type { AppConfig } from '../../config/app-config';
import { ThrottledWarning } from '../logging/throttled-warning';
import { ApiBusySharePublisher } from './api-busy-share.publisher';
import type { ApiBusySharesRepository } from './api-busy-shares.repository';

function publisher(role: AppConfig['role'], url: string | undefined, fail = false) {
  const calls: string[] = [];
  const act = (name: string) => () => {
    calls.push(name);
    return fail ? Promise.reject(new Error('connection refused')) : Promise.resolve();
  };
  const repository = {
    report: act('report'),
    remove: act('remove'),
    removeOlderThan: act('removeOlderThan'),
  } as unknown as ApiBusySharesRepository;
  const config = { role, database: { url } } as AppConfig;
  return { calls, publisher: new ApiBusySharePublisher(config, repository) };
}

describe('ApiBusySharePublisher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it.each([
    ['all', undefined],
    ['api', undefined],
    ['worker', 'postgres://db/atrium'],
  ] as const)(
    'publishes nothing where no worker-only process can read it (role %s, database %s)',
    async (role, url) => {
      const { calls, publisher: p } = publisher(role, url);
      p.onApplicationBootstrap();
      await jest.advanceTimersByTimeAsync(5000);
      await p.beforeApplicationShutdown();
      expect(calls).toEqual([]);
    },
  );

  it.each(['api', 'all'] as const)(
    'with APP_ROLE=%s on PostgreSQL: reports once a second, removes its row at shutdown',
    async (role) => {
      const { calls, publisher: p } = publisher(role, 'postgres://db/atrium');
      p.onApplicationBootstrap();
      await jest.advanceTimersByTimeAsync(3000);
      await p.beforeApplicationShutdown();
      await jest.advanceTimersByTimeAsync(3000);
      expect(calls).toEqual(['removeOlderThan', 'report', 'report', 'report', 'remove']);
    },
  );

  it('never throws when the database fails', async () => {
    const { calls, publisher: p } = publisher('api', 'postgres://db/atrium', true);
    p.onApplicationBootstrap();
    await jest.advanceTimersByTimeAsync(2000);
    await expect(p.beforeApplicationShutdown()).resolves.toBeUndefined();
    expect(calls.at(-1)).toBe('remove');
  });
});

describe('ThrottledWarning', () => {
  it('logs a repeating failure at most once per period, counting the ones left out', () => {
    const lines: unknown[] = [];
    const warning = new ThrottledWarning({ warn: (line: unknown) => void lines.push(line) }, 'not read', 60_000);
    for (let t = 0; t < 120_000; t += 1000) warning.warn(new Error('down'), t);
    expect(lines).toEqual([
      { msg: 'not read', error: 'down' },
      { msg: 'not read', error: 'down', notLoggedSince: 59 },
    ]);
  });
});
