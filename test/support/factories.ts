import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { DbExecutor } from '../../src/database/kysely.provider.js';
import type { TestApp } from './test-app.js';

export interface TestUser {
  id: string;
  email: string;
  password: string;
  name: string;
  role: 'admin' | 'member';
  token: string;
}

let counter = 0;

/** Registers and logs in a fresh user through the public routes. */
export async function makeUser(
  app: Pick<TestApp, 'http'>,
  overrides: Partial<{ email: string; password: string; name: string }> = {},
): Promise<TestUser> {
  counter += 1;
  const email = overrides.email ?? `user${counter}-${randomBytes(3).toString('hex')}@example.com`;
  const password = overrides.password ?? `pw-${randomBytes(8).toString('hex')}`;
  const name = overrides.name ?? `User ${counter}`;
  const registered = await app.http.post('/api/auth/register').send({ email, password, name }).expect(201);
  const login = await app.http.post('/api/auth/login').send({ email, password }).expect(200);
  return {
    id: registered.body.data.id,
    email,
    password,
    name,
    role: registered.body.data.role,
    token: login.body.data.accessToken,
  };
}

export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

export interface ApiKeyOptions {
  scopes: string[];
  name?: string;
  expiresIn?: 'never' | '30d' | '90d' | '180d' | '1y';
  projectIds?: string[];
  repos?: string[];
  tools?: string[];
  readOnly?: boolean;
}

/** Issues a personal API key through POST /api/api-keys; returns its id and the one-time plaintext. */
export async function makeApiKey(
  app: Pick<TestApp, 'http'>,
  user: TestUser,
  options: ApiKeyOptions,
): Promise<{ id: string; key: string }> {
  const { scopes, name = 'test key', expiresIn = 'never', ...pins } = options;
  const res = await app.http
    .post('/api/api-keys')
    .set(bearer(user.token))
    .send({ name, scopes, expiresIn, ...pins })
    .expect(201);
  return { id: res.body.data.id as string, key: res.body.data.key as string };
}

/** POST /api/v1/public/mcp/call; `args` undefined sends no `arguments` member at all. */
export function callTool(
  app: TestApp,
  key: string,
  name: string,
  args?: unknown,
  headers: Record<string, string> = {},
) {
  return app.http
    .post('/api/v1/public/mcp/call')
    .set(bearer(key))
    .set(headers)
    .send(args === undefined ? { name } : { name, arguments: args });
}

/** The `result` of a tool call that must succeed; a failure throws with the status and body. */
export async function toolResult(
  app: TestApp,
  key: string,
  name: string,
  args: Record<string, unknown> = {},
): Promise<any> {
  const res = await callTool(app, key, name, args);
  if (res.status !== 200) throw new Error(`${name} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.result;
}

/** A text document inserted as a row (no upload, no queued indexing job): what a test writes chunks for itself. */
export async function insertTextDocument(
  db: DbExecutor,
  document: { authorId: string; projectId: string | null; isPublic: boolean; title: string; text: string },
  extra: { textContent?: string; status?: 'indexed' } = {},
): Promise<{ id: string; title: string; sha256: string; text: string }> {
  const id = randomUUID();
  const content = Buffer.from(document.text);
  const sha256 = createHash('sha256').update(content).digest('hex');
  await db
    .insertInto('documents')
    .values({
      id,
      authorId: document.authorId,
      projectId: document.projectId,
      isPublic: document.isPublic,
      title: document.title,
      mimeType: 'text/markdown',
      sizeBytes: content.length,
      sha256,
      origin: 'text',
      content,
      ...extra,
    })
    .execute();
  return { id, title: document.title, sha256, text: document.text };
}
