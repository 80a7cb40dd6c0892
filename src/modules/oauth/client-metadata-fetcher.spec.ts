import { createServer, type Server } from 'node:http';
import type { AppConfig } from '../../config/app-config.js';
import { ClientMetadataFetcher } from './client-metadata-fetcher.js';

const fetcherWith = (allowPrivate: boolean) =>
  new ClientMetadataFetcher({ oauth: { allowPrivateClientMetadata: allowPrivate } } as AppConfig);

describe('client ID metadata documents: the SSRF guard', () => {
  let server: Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits += 1;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({
            client_id: `http://localhost:${port}${req.url}`,
            redirect_uris: ['http://127.0.0.1:1/cb'],
            client_name: 'Local',
          }),
        );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('refuses private and loopback targets, by literal address and by a name that resolves to one, without connecting', async () => {
    const fetcher = fetcherWith(false);
    await expect(fetcher.resolve(`https://127.0.0.1:${port}/client.json`)).rejects.toThrow(
      /private or special-purpose address \(loopback\)/,
    );
    await expect(fetcher.resolve(`https://[::1]:${port}/client.json`)).rejects.toThrow(/private or special-purpose/);
    await expect(fetcher.resolve(`https://[::7f00:1]:${port}/client.json`)).rejects.toThrow(
      /private or special-purpose/,
    );
    await expect(fetcher.resolve(`https://198.18.0.1:${port}/client.json`)).rejects.toThrow(
      /private or special-purpose/,
    );
    await expect(fetcher.resolve(`https://localhost:${port}/client.json`)).rejects.toThrow(
      /resolves to a private or special-purpose address/,
    );
    await expect(fetcher.resolve(`http://localhost:${port}/client.json`)).rejects.toThrow(/must use https/);
    await expect(fetcher.resolve('https://example.com/')).rejects.toThrow(/must have a path/);
    expect(hits).toBe(0);
  });

  it('with OAUTH_ALLOW_PRIVATE_CLIENT_METADATA=true the same local document is fetched once and then cached', async () => {
    const fetcher = fetcherWith(true);
    const url = `http://localhost:${port}/client.json`;
    await expect(fetcher.resolve(url)).resolves.toEqual({
      clientId: url,
      clientName: 'Local',
      redirectUris: ['http://127.0.0.1:1/cb'],
    });
    await fetcher.resolve(url);
    expect(hits).toBe(1);
  });
});
