import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { chromium, type Browser, type Page } from 'playwright-core';
import request from 'supertest';
import { startBuiltServer, type BuiltServer } from './support/app-process.js';
import { makeUser, type TestUser } from './support/factories.js';
import { freePort, pkcePair, REDIRECT_URI, registerPublicClient } from './support/oauth-helpers.js';
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

interface LanAddress {
  address?: string;
  /** Why there is none, for the skip message. */
  reason?: string;
  /** Removes an interface this file created. */
  cleanup: () => void;
}

/**
 * A non-loopback IPv4 address of this machine, as a colleague on the LAN would type it. Browsers never upgrade
 * loopback to https, so a test on 127.0.0.1 cannot see the blank pages. Without such an address (or with
 * TEST_LAN_ADDRESS=make, to try this path), one is made: on a dummy interface, or else as a second address of
 * `lo` (root and iproute2 needed). Only when both fail is the suite skipped.
 */
function lanAddress(): LanAddress {
  const nothing = () => undefined;
  if (process.env.TEST_LAN_ADDRESS !== 'make') {
    for (const entries of Object.values(networkInterfaces())) {
      const found = entries?.find((e) => e.family === 'IPv4' && !e.internal);
      if (found) return { address: found.address, cleanup: nothing };
    }
  }
  // 198.18.0.0/15 is reserved for network tests; one address per test process.
  const address = `198.18.${(process.pid >> 8) & 255}.${process.pid & 255 || 1}`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
  const name = `atrium${process.pid % 100_000}`;
  const failures: string[] = [];
  try {
    ip('link', 'add', name, 'type', 'dummy');
    try {
      ip('addr', 'add', `${address}/32`, 'dev', name);
      ip('link', 'set', name, 'up');
    } catch (error) {
      ip('link', 'del', name);
      throw error;
    }
    return { address, cleanup: () => ip('link', 'del', name) };
  } catch (error) {
    failures.push(`dummy interface: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    ip('addr', 'add', `${address}/32`, 'dev', 'lo');
    return { address, cleanup: () => ip('addr', 'del', `${address}/32`, 'dev', 'lo') };
  } catch (error) {
    failures.push(`address on lo: ${(error as Error).message.split('\n')[0]}`);
  }
  return { reason: `no non-loopback IPv4 address, and none could be made (${failures.join('; ')})`, cleanup: nothing };
}

const lan = lanAddress();
if (!lan.address) console.warn(`pages-over-http.e2e-spec.ts skipped: ${lan.reason}`);
const describeOnLan = lan.address ? describe : describe.skip;

/**
 * The three browser pages (account page, OAuth consent page, Swagger UI) opened the way a colleague opens an
 * internal install: `http://<the machine's LAN address>:<port>`, with PUBLIC_URL naming that http address. Each
 * must render (its stylesheet applied) and run its script, with no request upgraded to https.
 */
describeOnLan(`pages over plain http at a LAN address (${lan.address ?? lan.reason})`, () => {
  let server: BuiltServer;
  let browser: Browser;
  let page: Page;
  let base: string;
  let user: TestUser;
  const problems: string[] = [];
  const requested: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium package to run this suite`);
    const port = await freePort();
    base = `http://${lan.address}:${port}`;
    // Every address of the machine, as the default HOST (0.0.0.0) and the compose file bind it.
    server = await startBuiltServer(process.env.TEST_DATABASE_URL ? 'services' : 'embedded', {
      HOST: '0.0.0.0',
      PORT: String(port),
      PUBLIC_URL: base,
    });
    user = await makeUser(server);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/responded with a status of 4\d\d/.test(msg.text()))
        problems.push(`console: ${msg.text()}`);
    });
    page.on('request', (req) => requested.push(req.url()));
    // A request the page itself abandons when the test navigates away (the account page re-reads its key list on
    // focus) is aborted, not failed; an upgrade to https would fail with an SSL or connection error instead.
    page.on('requestfailed', (req) => {
      const reason = req.failure()?.errorText ?? '';
      if (reason !== 'net::ERR_ABORTED') problems.push(`failed: ${req.url()} ${reason}`);
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    if (server) expect(await server.stop()).toBe(0);
    lan.cleanup();
  });

  afterEach(() => {
    expect(problems).toEqual([]);
    // Nothing the pages load leaves the http origin (an upgrade would ask https://<address>:<port>).
    expect(requested.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith(REDIRECT_URI))).toEqual([]);
    requested.length = 0;
  });

  /** The style a stylesheet gave an element: proof the CSS loaded and applied. */
  const styleOf = (selector: string, property: string) =>
    page
      .locator(selector)
      .first()
      .evaluate(
        (el, prop) =>
          (globalThis as unknown as { getComputedStyle(e: unknown): { getPropertyValue(p: string): string } })
            .getComputedStyle(el)
            .getPropertyValue(prop),
        property,
      );

  it('answers without HSTS, upgrade-insecure-requests or COOP (PUBLIC_URL is http)', async () => {
    expect((await request(base).get('/favicon.ico').expect(200)).headers['content-type']).toMatch(/^image\//);
    for (const path of ['/', '/api/docs/', '/api/health']) {
      const res = await request(base).get(path).expect(200);
      expect(res.headers['strict-transport-security']).toBeUndefined();
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
      // Ignored by browsers on an http origin, and logged as a console error there.
      expect(res.headers['cross-origin-opener-policy']).toBeUndefined();
    }
  });

  it('renders the account page and runs its script', async () => {
    const answer = await page.goto(`${base}/`);
    expect(answer?.status()).toBe(200);
    // The login form is hidden in the HTML; app.js shows it.
    await page.getByRole('heading', { name: 'Sign in to Atrium' }).waitFor({ state: 'visible' });
    expect(await styleOf('.site-header', 'background-color')).toBe('rgb(246, 248, 250)');
    expect(await styleOf('#login-submit', 'background-color')).toBe('rgb(11, 92, 173)');
    // Signing in works from this origin too (fetch to the same http origin).
    await page.locator('#login-email').fill(user.email);
    await page.locator('#login-password').fill(user.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    expect(await page.locator('#whoami').textContent()).toContain(user.email);
    expect(requested).toEqual(expect.arrayContaining([`${base}/styles.css`, `${base}/app.js`]));
  });

  it('renders the OAuth consent page and runs its script', async () => {
    const clientId = await registerPublicClient(server);
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: 'tasks:read',
    });
    const answer = await page.goto(`${base}/oauth/authorize?${query}`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['strict-transport-security']).toBeUndefined();
    await page.getByRole('heading', { name: 'Sign in to connect Test client' }).waitFor({ state: 'visible' });
    expect(await styleOf('.site-header', 'background-color')).toBe('rgb(246, 248, 250)');
    expect(await page.locator('link[rel="icon"]').first().getAttribute('href')).toBe('/favicon.ico');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Test client wants to use Atrium as you' }).waitFor();
    expect(await page.getByRole('checkbox', { name: /^tasks:read/ }).isChecked()).toBe(true);
    // The page's project list (a fetch from this origin) arrives before the next test navigates away.
    await page.locator('#consent-projects', { hasText: 'You are not a member of any project.' }).waitFor();
  });

  it('renders Swagger UI and runs its script', async () => {
    const answer = await page.goto(`${base}/api/docs`);
    expect(answer?.status()).toBe(200);
    // Swagger UI builds the whole page from the OpenAPI document in its script.
    const title = page.locator('.swagger-ui .info .title');
    await title.waitFor({ state: 'visible' });
    expect(await title.textContent()).toContain('Atrium');
    expect(await styleOf('.swagger-ui .info .title', 'font-size')).toBe('36px');
    await page.locator('.swagger-ui .opblock-tag', { hasText: 'auth' }).first().waitFor({ state: 'visible' });
    // Atrium's icon, as on the other pages, instead of Swagger's.
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('/favicon.ico');
  });
});

/** The other half of the rule: with an https PUBLIC_URL (TLS at a proxy in front), browsers are told to stay on https. */
describe('security headers with an https PUBLIC_URL', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({
      env: {
        PUBLIC_URL: 'https://atrium.example.com',
        ...(process.env.TEST_DATABASE_URL ? {} : { DATABASE_POOL_SIZE: '1' }),
      },
    });
  }, 120_000);
  afterAll(async () => app?.close());

  it('sends HSTS, upgrade-insecure-requests and COOP on the pages and the API', async () => {
    const clientId = await registerPublicClient(app);
    const { challenge } = pkcePair();
    const consent = `/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256' })}`;
    for (const path of ['/', '/api/docs/', consent, '/api/health']) {
      const res = await app.http.get(path).expect(200);
      expect(res.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
      expect(res.headers['content-security-policy']).toContain('upgrade-insecure-requests');
      expect(res.headers['cross-origin-opener-policy']).toBe('same-origin');
    }
  });
});
