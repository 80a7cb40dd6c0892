import { ErrorCode } from '../../../common/errors/error-code.js';
import { assertWebhookUrl } from './webhook-address.js';

describe('webhook URL (the default configuration: https to a public address only)', () => {
  it.each([
    ['http (not https)', 'http://example.com/hook'],
    ['IPv4-compatible IPv6 loopback', 'https://[::7f00:1]/hook'],
    ['benchmarking 198.18/15', 'https://198.18.0.1/hook'],
    ['CGNAT 100.64/10', 'https://100.64.0.1/hook'],
    ['NAT64 of a private address', 'https://[64:ff9b::a00:1]/hook'],
    ['6to4 of a private address', 'https://[2002:c0a8:101::1]/hook'],
    ['unique-local IPv6', 'https://[fd00::1]/hook'],
    ['multicast', 'https://224.0.0.1/hook'],
    ['reserved 240/4', 'https://240.0.0.1/hook'],
    ['documentation range', 'https://192.0.2.10/hook'],
    ['loopback literal', 'https://127.0.0.1/hook'],
    ['private 10/8', 'https://10.1.2.3/hook'],
    ['link-local metadata', 'https://169.254.169.254/latest/meta-data'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/hook'],
    ['a name resolving to loopback', 'https://localhost/hook'],
    ['credentials in the URL', 'https://user:pass@93.184.216.34/hook'],
    ['not a URL', 'hook please'],
    ['another scheme', 'ftp://93.184.216.34/hook'],
  ])('%s → VALIDATION_FAILED on webhookUrl', async (_label, webhookUrl) => {
    await expect(assertWebhookUrl(webhookUrl, false)).rejects.toMatchObject({
      code: ErrorCode.ValidationFailed,
      details: [{ field: 'webhookUrl' }],
    });
  });

  it('a public https address passes; WEBHOOK_ALLOW_PRIVATE lets a local receiver through', async () => {
    await expect(assertWebhookUrl('https://93.184.216.34/hook', false)).resolves.toBeInstanceOf(URL);
    await expect(assertWebhookUrl('http://127.0.0.1:8080/hook', true)).resolves.toBeInstanceOf(URL);
  });
});
