import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer of the fake Chat Completions endpoint. */
export interface FakeLlmReply {
  /** Tool calls the "model" asks for (arguments are JSON-encoded unless given as a string). */
  toolCalls?: { name: string; arguments?: Record<string, unknown> | string; id?: string }[];
  content?: string | null;
  /** An HTTP error instead of a completion, with an OpenAI-style error body. */
  status?: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (the request may be aborted meanwhile). */
  delayMs?: number;
  /** Never answer; the client has to give up or abort. */
  hang?: boolean;
  /** With `status`: the error body quotes the request's Authorization header (a misbehaving upstream or proxy). */
  echoAuthorization?: boolean;
}

export interface RecordedRequest {
  headers: IncomingMessage['headers'];
  body: {
    model: string;
    messages: {
      role: string;
      content: string | null;
      tool_call_id?: string;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    }[];
    tools?: { type: string; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  };
  /** Set when the client went away before the answer was sent (an aborted request). */
  abortedAt?: number;
}

/**
 * A local OpenAI-compatible server (`POST /v1/chat/completions`) that plays scripted replies in order, so
 * the real client code (fetch, retries, timeouts, aborts) runs in tests. With the script empty it answers
 * a plain final message.
 */
export class FakeLlmServer {
  readonly requests: RecordedRequest[] = [];
  private script: FakeLlmReply[] = [];
  private policy?: (request: RecordedRequest) => FakeLlmReply;
  private server?: Server;
  private readonly open = new Set<ServerResponse>();
  baseUrl = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  /** Replaces the script. */
  play(...replies: FakeLlmReply[]): void {
    this.script = [...replies];
    this.policy = undefined;
    this.requests.length = 0;
  }

  /** Answers every request with `policy(request)` once the script is empty (a "model" that reacts to what it read). */
  respondWith(policy: ((request: RecordedRequest) => FakeLlmReply) | undefined): void {
    this.policy = policy;
  }

  remaining(): number {
    return this.script.length;
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const recorded: RecordedRequest = {
      headers: req.headers,
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
    };
    this.requests.push(recorded);
    this.open.add(res);
    res.on('close', () => {
      this.open.delete(res);
      if (!res.writableEnded) recorded.abortedAt = Date.now();
    });
    const reply = this.script.shift() ?? this.policy?.(recorded) ?? { content: 'Done.' };
    if (reply.hang) return;
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (res.destroyed) return;
    if (reply.status && reply.status >= 400) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(
        JSON.stringify({
          error: {
            message: reply.echoAuthorization ? `invalid key: ${req.headers.authorization}` : `scripted ${reply.status}`,
            type: 'server_error',
          },
        }),
      );
      return;
    }
    const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
      id: call.id ?? `call_${this.requests.length}_${i}`,
      type: 'function',
      function: {
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
      },
    }));
    const body = {
      id: `chatcmpl-${this.requests.length}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: recorded.body.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: reply.content ?? null,
            ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          },
          finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    };
    res.writeHead(200, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(body));
  }
}

/** The environment that points an app at a fake model server (the pool is larger on a real PostgreSQL). */
export function fakeModelEnv(llm: FakeLlmServer, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_POOL_SIZE: process.env.TEST_DATABASE_URL ? '10' : '1',
    LLM_PROVIDER: 'openai',
    LLM_BASE_URL: llm.baseUrl,
    LLM_MODEL: 'fake-model-1',
    ...extra,
  };
}

/** The payload of a tool message as the agent sends it (inside its `<tool-data>` block), parsed as JSON. */
export function toolData(content: string | null): any {
  const match = /^<tool-data [^>]*>\n([\s\S]*)\n<\/tool-data>$/.exec(content ?? '');
  if (!match) throw new Error(`not a <tool-data> block: ${String(content).slice(0, 200)}`);
  return JSON.parse(match[1]!);
}
