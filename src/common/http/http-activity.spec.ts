import { HttpActivity } from './http-activity';

describe('HttpActivity', () => {
  it('is idle with no requests', () => {
    expect(new HttpActivity().busyShare(10_000)).toBe(0);
  });

  it('counts the time of requests that ended in the last second, and forgets older ones', () => {
    const activity = new HttpActivity();
    activity.begin(10_000)(10_100);
    activity.begin(10_200)(10_300);
    expect(activity.busyShare(10_400)).toBeCloseTo(0.2);
    // Ended more than a second ago: out of the window.
    expect(activity.busyShare(11_350)).toBe(0);
  });

  it('counts a request in flight from its start, once even if ended twice, and never more than all the time', () => {
    const activity = new HttpActivity();
    const end = activity.begin(10_000);
    expect(activity.busyShare(10_500)).toBeCloseTo(0.5);
    end(10_600);
    end(10_700);
    expect(activity.busyShare(10_650)).toBeCloseTo(0.6);
    const ends = [activity.begin(20_000), activity.begin(20_000), activity.begin(20_000)];
    expect(activity.busyShare(20_900)).toBe(1);
    for (const e of ends) e(20_900);
  });
});
