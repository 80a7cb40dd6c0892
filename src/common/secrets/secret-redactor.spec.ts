import { metricsRegistry } from '../metrics/metrics.registry.js';
import { mayContainSecret, redactJsonText, redactText, redactValue } from './secret-redactor.js';

const B62 = 'aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA1b2C'; // 36
const SAMPLES: [string, string][] = [
  ['atrium', `atr_${B62}Zz`],
  ['atrium', `ato_${B62}Zz`],
  ['atrium', `atf_${B62}Zz`],
  ['atrium', `atcs_${B62}Zz`],
  ['atrium', `atac_${B62}Zz`],
  ['atrium', `atp_${B62}Zz_-abc`],
  ['atrium', `whsec_${B62}_-abcdef`],
  ['github', `ghp_${B62}`],
  ['github', `gho_${B62}`],
  ['github', `ghu_${B62}`],
  ['github', `ghs_${B62}`],
  ['github', `ghr_${B62}`],
  ['github', `github_pat_11ABCDEFG0${B62}_${B62}`],
  ['aws', 'AKIAIOSFODNN7EXAMPLE'],
  ['aws', 'ASIAY34FZKBOKMUTVV7A'],
  ['google', 'AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY'],
  ['slack', 'xoxb-2634527890-1234567890123-AbCdEfGhIjKlMnOpQrStUv'],
  ['stripe', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'],
  ['stripe', 'rk_live_4eC39HqLyjWDarjtT1zdp7dc'],
  ['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
  ['private_key', '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc==\n-----END RSA PRIVATE KEY-----'],
  ['private_key', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----'],
];

const count = async (kind: string, where: string) =>
  (await metricsRegistry.getSingleMetric('atrium_redactions_total')!.get()).values.find(
    (v) => v.labels.kind === kind && v.labels.where === where,
  )?.value ?? 0;

describe('secret redactor', () => {
  it.each(SAMPLES)('%s shape is replaced in text, in JSON text and in values, and counted', async (kind, secret) => {
    const before = await count(kind, 'tool_result');
    const text = `see ${secret} here`;
    expect(redactText(text, 'tool_result')).toBe('see [redacted] here');
    const json = JSON.stringify([{ title: 'x', description: text, other: 'keep "quoted" \\ too' }]);
    const redactedJson = redactJsonText(json, 'tool_result');
    expect(JSON.parse(redactedJson)).toEqual([
      { title: 'x', description: 'see [redacted] here', other: 'keep "quoted" \\ too' },
    ]);
    expect(redactValue({ a: [{ b: text }], n: 1 }, 'tool_result')).toEqual({ a: [{ b: 'see [redacted] here' }], n: 1 });
    expect((await count(kind, 'tool_result')) - before).toBe(3);
  });

  it('a private key block without its end is cut to the end of its string, and JSON stays valid', () => {
    const json = JSON.stringify({ a: '-----BEGIN PRIVATE KEY-----\nMIIE', b: 'after' });
    expect(JSON.parse(redactJsonText(json, 'tool_result'))).toEqual({ a: '[redacted]', b: 'after' });
  });

  it('ordinary text, snake_case words and ids pass unchanged, and the same object comes back', () => {
    const value = {
      id: '0b9e1c2a-1111-4222-8333-444455556666',
      title: 'tomato_sauce_recipe_for_the_whole_family and plato_the_philosopher_was_here_with_friends',
      description:
        'Use create_task, list_tasks, due_date, assignee_id; a sk_test_ key is fine; ghp_short; atr_tooShort; AKIA lower',
      tags: ['ask_live_demo', 'github_pat_x'],
    };
    expect(redactValue(value, 'tool_result')).toBe(value);
    const json = JSON.stringify([value, value]);
    expect(redactJsonText(json, 'tool_result')).toBe(json);
  });

  it('mayContainSecret is false for a plain task list (the hot path does no replacing)', () => {
    const row = {
      id: 'x',
      title: 'Quarterly report',
      description: 'Write it',
      due_date: '2026-12-01',
      assignee_id: null,
      creator_id: 'y',
      project_id: null,
      created_at: 'z',
    };
    expect(mayContainSecret(JSON.stringify(Array.from({ length: 50 }, () => row)))).toBe(false);
  });
});
