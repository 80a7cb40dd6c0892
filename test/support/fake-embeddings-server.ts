import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A minimal OpenAI-compatible `POST /v1/embeddings` server: deterministic vectors of `dims` numbers,
 * answers that can be slowed down (`delayMs`), and a record of every text it embedded.
 */
export class FakeEmbeddings {
  delayMs = 0;
  requests = 0;
  /** Every input text, in arrival order. */
  readonly texts: string[] = [];
  baseUrl = '';
  private server?: Server;

  constructor(readonly dims = 8) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests += 1;
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input: string[]; model: string };
        this.texts.push(...body.input);
        const answer = () => {
          if (res.destroyed) return;
          const data = body.input.map((text, index) => ({
            object: 'embedding',
            index,
            embedding: this.vectorOf(text),
          }));
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(
              JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }),
            );
        };
        if (this.delayMs > 0) setTimeout(answer, this.delayMs).unref();
        else answer();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  /** The environment that points an Atrium process at this server (after start()). */
  env(): Record<string, string> {
    return {
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: this.baseUrl,
      EMBEDDINGS_MODEL: 'fake-embed',
      EMBEDDINGS_DIMENSIONS: String(this.dims),
    };
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private vectorOf(text: string): number[] {
    const v = Array.from(
      { length: this.dims },
      (_, i) => ((text.charCodeAt(i % Math.max(1, text.length)) || 1) % 17) + 1,
    );
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  }
}
