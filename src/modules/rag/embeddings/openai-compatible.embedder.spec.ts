import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EmbeddingError } from './embedding-provider.js';
import { OpenAiCompatibleEmbedder } from './openai-compatible.embedder.js';

type Handler = (body: { model: string; input: string[] }, req: IncomingMessage, res: ServerResponse) => void;

/** A local stand-in for an OpenAI-compatible embeddings service, speaking the real wire format. */
async function fakeEmbeddingsServer(
  handler: Handler,
): Promise<{ url: string; calls: { input: string[]; auth?: string }[]; close(): Promise<void> }> {
  const calls: { input: string[]; auth?: string }[] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(raw) as { model: string; input: string[] };
      calls.push({ input: body.input, auth: req.headers.authorization });
      handler(body, req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function ok(res: ServerResponse, input: string[], dims: number, shuffle = false): void {
  const data = input.map((text, index) => ({
    object: 'embedding',
    index,
    embedding: Array.from({ length: dims }, (_, d) => (text.length + d) / 100),
  }));
  if (shuffle) data.reverse();
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ object: 'list', data, model: 'fake', usage: { prompt_tokens: 1, total_tokens: 1 } }));
}

describe('OpenAiCompatibleEmbedder', () => {
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  it('batches inputs, keeps order by index, and sends the key', async () => {
    const server = await fakeEmbeddingsServer((body, _req, res) => ok(res, body.input, 4, true));
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 4,
      apiKey: 'sk-test',
      batchSize: 2,
    });
    const texts = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
    const vectors = await embedder.embed(texts, 'document');
    expect(server.calls.map((call) => call.input.length)).toEqual([2, 2, 1]);
    expect(server.calls[0].auth).toBe('Bearer sk-test');
    expect(vectors.map((vector) => Math.round(vector[0] * 100))).toEqual([1, 2, 3, 4, 5]);
    expect(embedder.key).toBe('openai:m:4');
  });

  it('retries 429 and 500 with backoff, then succeeds', async () => {
    let n = 0;
    const server = await fakeEmbeddingsServer((body, _req, res) => {
      n += 1;
      if (n === 1) res.writeHead(429, { 'retry-after': '0' }).end('{"error":{"message":"slow down"}}');
      else if (n === 2) res.writeHead(500).end('{"error":{"message":"boom"}}');
      else if (n === 3) res.writeHead(503).end();
      else ok(res, body.input, 3);
    });
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 3,
      initialBackoffMs: 5,
    });
    const vectors = await embedder.embed(['x'], 'document');
    expect(vectors).toHaveLength(1);
    expect(server.calls).toHaveLength(4);
  });

  it('gives up after maxRetries with a clear error', async () => {
    const server = await fakeEmbeddingsServer((_body, _req, res) => res.writeHead(502).end('bad gateway'));
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 3,
      initialBackoffMs: 1,
      maxRetries: 2,
    });
    await expect(embedder.embed(['x'], 'document')).rejects.toThrow(/HTTP 502.*gave up after 3 attempts/);
    expect(server.calls).toHaveLength(3);
  });

  it('retries a query embedding (on a request path) once at most, and marks the failure as upstream', async () => {
    const server = await fakeEmbeddingsServer((_body, _req, res) => res.writeHead(502).end('bad gateway'));
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 3,
      initialBackoffMs: 1,
      maxRetries: 4,
    });
    const error = (await embedder.embed(['x'], 'query').catch((e: unknown) => e)) as EmbeddingError;
    expect(error.message).toMatch(/gave up after 2 attempts/);
    expect(error.upstream).toBe('embeddings');
    expect(server.calls).toHaveLength(2);
  });

  it('does not retry a 400 or 401', async () => {
    const server = await fakeEmbeddingsServer((_body, req, res) =>
      res.writeHead(401).end(JSON.stringify({ error: { message: `bad key ${req.headers.authorization}` } })),
    );
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 3,
      initialBackoffMs: 1,
      apiKey: 'sk-secret-embeddings-key',
    });
    const error = (await embedder.embed(['x'], 'query').catch((e: unknown) => e)) as EmbeddingError;
    expect(error).toBeInstanceOf(EmbeddingError);
    expect(error.status).toBe(401);
    // The upstream's text (here echoing the Authorization header) is never passed on.
    expect(error.message).toBe('embeddings service answered HTTP 401');
    expect(server.calls).toHaveLength(1);
  });

  it('times out a hanging request and retries it', async () => {
    let n = 0;
    const server = await fakeEmbeddingsServer((body, _req, res) => {
      n += 1;
      if (n === 1) return; // never answers
      ok(res, body.input, 2);
    });
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 2,
      timeoutMs: 200,
      initialBackoffMs: 1,
    });
    const started = Date.now();
    await expect(embedder.embed(['x'], 'query')).resolves.toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(server.calls).toHaveLength(2);
  });

  it('reports a timeout clearly when every attempt hangs', async () => {
    const server = await fakeEmbeddingsServer(() => undefined);
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'm',
      dimensions: 2,
      timeoutMs: 100,
      initialBackoffMs: 1,
      maxRetries: 1,
    });
    await expect(embedder.embed(['x'], 'query')).rejects.toThrow(/timed out after 100 ms/);
  });

  it('fails clearly on a wrong dimension and does not retry', async () => {
    const server = await fakeEmbeddingsServer((body, _req, res) => ok(res, body.input, 1536));
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.url,
      model: 'text-embedding-3-small',
      dimensions: 768,
      initialBackoffMs: 1,
    });
    await expect(embedder.embed(['x'], 'document')).rejects.toThrow(
      'model "text-embedding-3-small" returned 1536-dimensional vectors but EMBEDDINGS_DIMENSIONS=768',
    );
    expect(server.calls).toHaveLength(1);
  });

  it('rejects a response with the wrong number of embeddings', async () => {
    const server = await fakeEmbeddingsServer((body, _req, res) => ok(res, body.input.slice(1), 2));
    servers.push(server);
    const embedder = new OpenAiCompatibleEmbedder({ baseUrl: server.url, model: 'm', dimensions: 2 });
    await expect(embedder.embed(['x', 'y'], 'document')).rejects.toThrow(/returned 1 embeddings for 2 inputs/);
  });

  it('reports an unreachable service', async () => {
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: 'http://127.0.0.1:1/v1',
      model: 'm',
      dimensions: 2,
      maxRetries: 0,
    });
    await expect(embedder.embed(['x'], 'document')).rejects.toThrow(/^embeddings service could not be reached/);
  });
});
