import { createServer, request, type Server } from 'node:http';
import { checkOutboundUrl, checkOutboundUrlResolving, guardedLookup, OutboundUrlError } from './outbound-guard.js';

const strict = { allowPrivate: false, label: 'url' };
const open = { allowPrivate: true, label: 'url' };

describe('outbound URL guard', () => {
  it.each([
    'https://[::7f00:1]/',
    'https://198.18.0.1/',
    'https://100.64.0.1/',
    'https://[::ffff:127.0.0.1]/',
    'https://127.1/',
    'https://2130706433/',
    'https://0x7f.0.0.1/',
    'https://[64:ff9b::a00:1]/',
    'https://[2002:c0a8:101::1]/',
    'https://[fd12::1]/',
    'https://169.254.169.254/latest',
    'https://0.0.0.0/',
    'https://255.255.255.255/',
    'https://224.0.0.1/',
  ])('%s is refused without a connection', (url) => {
    expect(() => checkOutboundUrl(url, strict)).toThrow(OutboundUrlError);
  });

  it('scheme and credentials; the allow-private switch lets local addresses and plain http through', () => {
    expect(() => checkOutboundUrl('http://93.184.216.34/', strict)).toThrow(/must use https/);
    expect(() => checkOutboundUrl('https://u:p@93.184.216.34/', strict)).toThrow(/credentials/);
    expect(() => checkOutboundUrl('nope', strict)).toThrow(/absolute URL/);
    expect(checkOutboundUrl('https://93.184.216.34/x', strict).hostname).toBe('93.184.216.34');
    expect(checkOutboundUrl('http://127.0.0.1:1/x', open).port).toBe('1');
  });

  it('a name resolving to loopback is refused when given and at connect time', async () => {
    await expect(checkOutboundUrlResolving('https://localhost/x', strict)).rejects.toMatchObject({
      reason: 'not_public',
    });
    await expect(checkOutboundUrlResolving('https://localhost/x', open)).resolves.toBeInstanceOf(URL);
  });

  describe('at connect time', () => {
    let server: Server;
    let port: number;
    let hits = 0;
    beforeAll(async () => {
      server = createServer((_req, res) => {
        hits += 1;
        res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    const get = (allowPrivate: boolean) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `http://localhost:${port}/`,
          { lookup: guardedLookup({ allowPrivate, label: 'url' }) },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });

    it('the socket never connects to a name that resolves to a private address; with the switch it does', async () => {
      await expect(get(false)).rejects.toMatchObject({ code: 'EADDRNOTPUBLIC' });
      expect(hits).toBe(0);
      await expect(get(true)).resolves.toBe(200);
      expect(hits).toBe(1);
    });
  });
});
