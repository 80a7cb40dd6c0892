import { bearer, type TestUser } from './factories.js';
import type { TestApp } from './test-app.js';

const FINAL = ['succeeded', 'failed', 'cancelled'];

export interface CancelRaceTally {
  accepted: number;
  conflicts: number;
  /** Runs whose cancel was answered 202 but that ended otherwise: must stay empty. */
  broken: { jobId: string; answer: unknown; final: string }[];
  /** Runs whose cancel was answered 409 although they had not finished: must stay empty. */
  wrongConflicts: { jobId: string; final: string }[];
}

/**
 * Starts a run and cancels it at once (after a varying short pause, so both orders happen), many times, and
 * checks the rule users rely on: a 202 cancel always ends `cancelled`; a 409 only for a run already finished.
 */
export async function raceExecuteAndCancel(
  app: TestApp,
  user: TestUser,
  body: Record<string, unknown>,
  iterations: number,
): Promise<CancelRaceTally> {
  const tally: CancelRaceTally = { accepted: 0, conflicts: 0, broken: [], wrongConflicts: [] };
  for (let i = 0; i < iterations; i += 1) {
    const jobId = (await app.http.post('/api/agent/execute').set(bearer(user.token)).send(body).expect(202)).body.data
      .jobId as string;
    // 0..~60 ms: sometimes before the worker claims the run, sometimes mid-run, sometimes after it finished.
    await new Promise((resolve) => setTimeout(resolve, (i * 7) % 61));
    const cancel = await app.http.post(`/api/agent/cancel/${jobId}`).set(bearer(user.token));
    expect([202, 409]).toContain(cancel.status);
    let run: { status: string };
    for (let polls = 0; ; polls += 1) {
      run = (await app.http.get(`/api/agent/status/${jobId}`).set(bearer(user.token)).expect(200)).body.data;
      if (FINAL.includes(run.status)) break;
      if (polls > 400) throw new Error(`run ${jobId} never finished: ${JSON.stringify(run)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (cancel.status === 202) {
      tally.accepted += 1;
      if (run.status !== 'cancelled') tally.broken.push({ jobId, answer: cancel.body.data, final: run.status });
    } else {
      tally.conflicts += 1;
      expect(cancel.body.error.code).toBe('STATE_CONFLICT');
      if (run.status === 'cancelled') tally.wrongConflicts.push({ jobId, final: run.status });
    }
  }
  return tally;
}
