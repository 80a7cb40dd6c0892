import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { bearer, type TestUser } from './factories.js';
import type { TestApp } from './test-app.js';

/** A free loopback port (for an app whose PUBLIC_URL must name its own port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const REDIRECT_URI = 'http://127.0.0.1:49152/callback';

/** RFC 7591 registration of a public client (token_endpoint_auth_method none). */
export async function registerPublicClient(
  app: Pick<TestApp, 'http'>,
  redirectUris: string[] = [REDIRECT_URI],
): Promise<string> {
  const res = await app.http
    .post('/oauth/register')
    .send({ client_name: 'Test client', redirect_uris: redirectUris, token_endpoint_auth_method: 'none' })
    .expect(201);
  return res.body.client_id as string;
}

/** The consent page's JSON (what GET /oauth/authorize embedded), from the served HTML. */
export function consentRequestOf(html: string): Record<string, any> {
  const match = /<script type="application\/json" id="authorization-request">([\s\S]*?)<\/script>/.exec(html);
  if (!match) throw new Error('no authorization request in the consent page');
  return JSON.parse(match[1]) as Record<string, any>;
}

/**
 * What a user does in the browser: open the authorization URL (the consent page), then approve it as the
 * page's script would (POST /api/oauth/authorize with the user's token). Returns the redirect it answers.
 */
export async function consent(
  app: TestApp,
  user: TestUser,
  authorizationUrl: string | URL,
  answer: Record<string, unknown> = {},
): Promise<URL> {
  const url = new URL(authorizationUrl);
  const page = await app.http.get(`${url.pathname}${url.search}`).expect(200);
  const res = await approveConsent(app, user, consentRequestOf(page.text), answer).expect(200);
  return new URL(res.body.data.redirectTo as string);
}

/** POST /api/oauth/authorize approving the consent page's request (with the user's answer), as the page's script does. */
export function approveConsent(
  app: TestApp,
  user: TestUser,
  request: Record<string, any>,
  answer: Record<string, unknown> = {},
) {
  return app.http
    .post('/api/oauth/authorize')
    .set(bearer(user.token))
    .send({
      clientId: request.clientId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      codeChallengeMethod: request.codeChallengeMethod,
      scope: request.scopes.join(' '),
      resource: request.resource,
      ...(request.state !== null ? { state: request.state } : {}),
      approve: true,
      ...answer,
    });
}

/** The query of an authorization request of a public client (code, PKCE S256) to REDIRECT_URI unless told. */
export function authorizeQuery(
  clientId: string,
  challenge: string,
  options: { scope?: string; redirectUri?: string; state?: string } = {},
): URLSearchParams {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: options.redirectUri ?? REDIRECT_URI,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: options.state ?? 'st-1',
    ...(options.scope ? { scope: options.scope } : {}),
  });
}

/** Consent through the raw routes for a registered client: returns the code. */
export async function codeFor(
  app: TestApp,
  user: TestUser,
  clientId: string,
  challenge: string,
  options: { scope?: string; redirectUri?: string; answer?: Record<string, unknown> } = {},
): Promise<string> {
  const query = authorizeQuery(clientId, challenge, options);
  const redirect = await consent(app, user, `${app.baseUrl}/oauth/authorize?${query}`, options.answer);
  const code = redirect.searchParams.get('code');
  if (!code) throw new Error(`no code in ${redirect.toString()}`);
  return code;
}

/** POST /oauth/token, form-encoded. */
export function tokenRequest(app: TestApp, form: Record<string, string>) {
  return app.http.post('/oauth/token').type('form').send(form);
}

/** Code → tokens for a public client. */
export async function exchange(
  app: TestApp,
  clientId: string,
  code: string,
  verifier: string,
  redirectUri = REDIRECT_URI,
) {
  const res = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: redirectUri,
  }).expect(200);
  return res.body as {
    access_token: string;
    refresh_token: string;
    expires_in: number;
    scope: string;
    token_type: string;
  };
}

/** A user's OAuth access + refresh tokens for the given scopes (and pins), by the whole flow. */
export async function oauthTokens(
  app: TestApp,
  user: TestUser,
  scopes: string[],
  answer: Record<string, unknown> = {},
) {
  const clientId = await registerPublicClient(app);
  const { verifier, challenge } = pkcePair();
  const code = await codeFor(app, user, clientId, challenge, { scope: scopes.join(' '), answer });
  return { clientId, ...(await exchange(app, clientId, code, verifier)) };
}
