import { randomInt } from 'node:crypto';

/**
 * Small shared pieces of the reliability/security drills (test/drill-*.e2e-spec.ts): a seeded PRNG so a
 * failing run can be replayed with DRILL_SEED, a raw HTTP caller that keeps the body text as sent by the
 * server (leak scans look at the bytes, not at a parsed object), and the "does this body betray the
 * implementation" check.
 */

/** mulberry32: tiny, fast, good enough to pick test inputs; same seed → same sequence. */
export class Prng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(minInclusive: number, maxInclusive: number): number {
    return minInclusive + Math.floor(this.next() * (maxInclusive - minInclusive + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  subset<T>(items: readonly T[], p = 0.5): T[] {
    return items.filter(() => this.next() < p);
  }

  hex(length: number): string {
    let out = '';
    while (out.length < length) out += Math.floor(this.next() * 16).toString(16);
    return out;
  }
}

/** DRILL_SEED when given (decimal), else a fresh random seed; always printed by the caller. */
export function drillSeed(): number {
  const raw = process.env.DRILL_SEED;
  if (raw !== undefined && raw !== '') {
    const seed = Number(raw);
    if (!Number.isInteger(seed) || seed < 0) throw new Error(`DRILL_SEED must be a non-negative integer, got ${raw}`);
    return seed;
  }
  return randomInt(0, 2 ** 31);
}

export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON, or undefined when the body is not JSON. */
  json: any;
}

export interface RawRequest {
  method: string;
  path: string;
  token?: string;
  /** A JS value sent as JSON, unless `rawBody` is given. */
  body?: unknown;
  rawBody?: string | Buffer | Uint8Array | FormData;
  contentType?: string;
  headers?: Record<string, string>;
}

/** One HTTP call with fetch (keep-alive), never throwing on a status. */
export async function call(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
  let body: RequestInit['body'];
  if (req.rawBody !== undefined) {
    body = req.rawBody as RequestInit['body'];
    if (req.contentType !== undefined) headers['content-type'] = req.contentType;
  } else if (req.body !== undefined) {
    body = JSON.stringify(req.body);
    headers['content-type'] = req.contentType ?? 'application/json';
  }
  const response = await fetch(baseUrl + req.path, { method: req.method, headers, body });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/**
 * Signs that a body shows the implementation (stack frames, source paths, driver errors, SQL). The
 * words are matched in the shapes they take in such output, so ordinary messages do not trip them.
 */
const INTERNALS: readonly RegExp[] = [
  /\bat [\w$.<>]+ \(/, // stack frame "at fn ("
  /\bat (?:\/|file:|node:)/, // stack frame "at /path" / "at node:internal"
  /\.ts:\d+/,
  /\.js:\d+:\d+/,
  /QueryFailedError/,
  /\bSELECT\b[\s\S]{0,200}\bFROM\b/,
  /\bINSERT INTO\b/,
  /\bUPDATE\b\s+\w+\s+SET\b/,
  /relation "[^"]*"/,
  /syntax error/i,
  /invalid input syntax/i,
  /node_modules/,
  /TypeError|ReferenceError|RangeError/,
];

export function internalsIn(text: string): string | null {
  for (const pattern of INTERNALS) {
    const match = pattern.exec(text);
    if (match) return match[0];
  }
  return null;
}

/** A short, printable excerpt for a failure report. */
export function excerpt(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
}

/**
 * Uploads `text` as a Markdown file to `projectId` through the running server, with an X-Request-Id of the test's
 * choosing (the logs and job records name it), and answers the new document's id after checking the 201.
 */
export async function uploadMarkdown(
  baseUrl: string,
  token: string,
  upload: { projectId: string; text: string; fileName: string; requestId: string; title?: string },
): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([upload.text], { type: 'text/markdown' }), upload.fileName);
  form.append('projectId', upload.projectId);
  if (upload.title !== undefined) form.append('title', upload.title);
  const res = await call(baseUrl, {
    method: 'POST',
    path: '/api/documents/upload',
    token,
    rawBody: form,
    headers: { 'X-Request-Id': upload.requestId },
  });
  expect(res.status).toBe(201);
  return res.json.data.id as string;
}
