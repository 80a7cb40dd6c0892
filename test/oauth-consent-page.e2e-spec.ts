import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { pkcePair, REDIRECT_URI, registerPublicClient, tokenRequest } from './support/oauth-helpers.js';
import { startTestApp, type TestApp } from './support/test-app.js';

/** Debian's system Chromium, as in account-page.e2e-spec.ts. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
const EMBEDDED_SAFE_ENV: Record<string, string> = process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' };

/**
 * The OAuth consent page (GET /oauth/authorize) and the account page's "Connected apps" in a real
 * browser: sign in, narrow scopes, pin a project, approve, land on the app's redirect URI with a code
 * that the app exchanges; then disconnect the app from the account page.
 */
describe('OAuth consent page and connected apps in a real browser', () => {
  let app: TestApp;
  let browser: Browser;
  let page: Page;
  let user: TestUser;
  let projectId: string;
  const pageProblems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium package to run this suite`);
    app = await startTestApp({ env: EMBEDDED_SAFE_ENV });
    user = await makeUser(app);
    projectId = (
      await app.http.post('/api/projects').set(bearer(user.token)).send({ name: 'Consent project' }).expect(201)
    ).body.data.id;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/responded with a status of 4\d\d/.test(msg.text()))
        pageProblems.push(`console: ${msg.text()}`);
    });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });
  afterEach(() => expect(pageProblems).toEqual([]));

  it('signs in, narrows scopes, pins a project, approves and returns to the app with a working code', async () => {
    const clientId = await registerPublicClient(app);
    const { verifier, challenge } = pkcePair();
    // The app's loopback redirect URI has no server here: the browser's arrival there is captured.
    let arrived: URL | undefined;
    await page.route(`${REDIRECT_URI}**`, async (route) => {
      arrived = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>back in the app</p>' });
    });
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'tasks:read tasks:write',
      state: 'browser-state',
    });
    await page.goto(`${app.baseUrl}/oauth/authorize?${query}`);
    await page.getByRole('heading', { name: 'Sign in to connect Test client' }).waitFor();
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Test client wants to use Atrium as you' }).waitFor();
    expect(await page.locator('#consent-redirect-host').textContent()).toBe('127.0.0.1:49152');
    await page.getByRole('checkbox', { name: /^tasks:write/ }).uncheck();
    await page.getByRole('checkbox', { name: 'Consent project' }).check();
    await page.getByLabel('Stay connected for').selectOption('30d');
    await page.getByRole('checkbox', { name: /Read-only/ }).check();
    await page.getByLabel(/Only these tools/).fill('list_tasks, get_task');
    await page.getByLabel(/Only from these addresses/).fill('127.0.0.1, 10.0.0.0/8');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${REDIRECT_URI}**`);
    expect(arrived?.searchParams.get('state')).toBe('browser-state');
    const code = arrived?.searchParams.get('code');
    expect(code).toMatch(/^atac_/);
    const stored = await page.evaluate<string>(
      'JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } })',
    );
    expect(stored).toBe('{"local":{},"session":{}}');

    const tokens = await tokenRequest(app, {
      grant_type: 'authorization_code',
      code: code!,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
    }).expect(200);
    expect(tokens.body.scope).toBe('tasks:read');
    const grants = await app.http.get('/api/oauth/grants').set(bearer(user.token)).expect(200);
    expect(grants.body.data.items[0]).toMatchObject({
      clientName: 'Test client',
      scopes: ['tasks:read'],
      projectIds: [projectId],
      tools: ['list_tasks', 'get_task'],
      readOnly: true,
      allowedIps: ['127.0.0.1/32', '10.0.0.0/8'],
    });
  });

  it('deny sends access_denied back to the app', async () => {
    const clientId = await registerPublicClient(app);
    const { challenge } = pkcePair();
    let arrived: URL | undefined;
    await page.route(`${REDIRECT_URI}**`, async (route) => {
      arrived = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>back</p>' });
    });
    await page.goto(
      `${app.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256' })}`,
    );
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL(`${REDIRECT_URI}**`);
    expect(arrived?.searchParams.get('error')).toBe('access_denied');
  });

  it('the account page lists the connected app and disconnects it', async () => {
    await page.goto(`${app.baseUrl}/`);
    // The account page also has a sign-up form with its own Email and Password fields.
    await page.locator('#login-email').fill(user.email);
    await page.locator('#login-password').fill(user.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    const row = page.locator('#apps-body tr', { hasText: 'Test client' });
    await row.waitFor();
    expect(await row.textContent()).toContain('limited to 1 project');
    expect(await row.textContent()).toContain('read-only; only tools: list_tasks, get_task');
    expect(await row.textContent()).toContain('only from 127.0.0.1/32, 10.0.0.0/8');
    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Disconnect Test client' }).click();
    await page.locator('#apps-empty').waitFor({ state: 'visible' });
    const grants = await app.http.get('/api/oauth/grants').set(bearer(user.token)).expect(200);
    expect(grants.body.data.items).toEqual([]);
  });
});
