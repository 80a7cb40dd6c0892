import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { bearer, makeUser, type TestUser } from './support/factories.js';
import { startBuiltServer, type BuiltServer } from './support/app-process.js';

/**
 * The account page (public/) in a real headless Chromium: the system browser from Debian's `chromium`
 * package, never one Playwright downloads.
 */
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
const OUTPUT = resolve(__dirname, '..', 'test-output');
const SCREENSHOT = join(OUTPUT, 'account-page-keys.png');

/** Connects the way an MCP client configured with this url and these headers does, and lists the tools. */
async function toolsSeenBy(url: string, headers: Record<string, string>): Promise<string[]> {
  const client = new McpClient({ name: 'snippet-check', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

describe('account page (dist/public of the built server) in a real browser', () => {
  let app: BuiltServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let user: TestUser;
  let admin: TestUser;
  let projectName: string;
  /** Script errors and CSP violations seen by the page; the page must run clean under the helmet CSP. */
  const pageProblems: string[] = [];
  /** Secrets that must never reach the URL or web storage. */
  const secrets: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium) to run the account page e2e`,
      );
    }
    // What `npm start` serves: dist/public of the build, on the services CI gives it or the embedded default.
    app = await startBuiltServer(process.env.TEST_DATABASE_URL ? 'services' : 'embedded');
    admin = await makeUser(app); // the first account is the admin; the main flow runs as an ordinary member
    expect(admin.role).toBe('admin');
    user = await makeUser(app);
    expect(user.role).toBe('member');
    projectName = 'Browser project';
    await app.http.post('/api/projects').set(bearer(user.token)).send({ name: projectName }).expect(201);

    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.baseUrl });
    page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/responded with a status of 4\d\d/.test(msg.text()))
        pageProblems.push(`console: ${msg.text()}`);
    });
    await page.goto(app.baseUrl + '/');
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (app) expect(await app.stop()).toBe(0);
  });

  afterEach(() => {
    expect(pageProblems).toEqual([]);
  });

  const keyRow = (name: string) =>
    page.locator('#keys-body tr', { has: page.locator('th.key-name', { hasText: name }) });

  async function expectNoSecretsInUrlOrStorage(): Promise<void> {
    const stored = await page.evaluate<string>(
      'JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } })',
    );
    for (const secret of secrets) {
      expect(page.url()).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }
    expect(stored).toBe('{"local":{},"session":{}}');
  }

  it('signs a new user up (AUTH_SIGNUP is open), with errors that clear once fixed', async () => {
    await page.getByRole('heading', { name: 'New here? Create an account' }).waitFor();
    const email = `signup-${Date.now()}@example.com`;
    await page.locator('#signup-name').fill('New Person');
    await page.locator('#signup-email').fill(email);
    await page.locator('#signup-password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.locator('#signup-error', { hasText: 'at least 10 characters' }).waitFor();
    await page.locator('#signup-password').fill('a-long-enough-password');
    expect(await page.locator('#signup-error').textContent()).toBe('');
    // The server's answer for a taken email is shown as it comes.
    await page.locator('#signup-email').fill(user.email);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.locator('#signup-error:not(:empty)').waitFor();
    expect(await page.locator('#signup-error').textContent()).toMatch(/already/i);
    await page.locator('#signup-email').fill(email);
    expect(await page.locator('#signup-error').textContent()).toBe('');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    expect(await page.locator('#whoami').textContent()).toContain(email);
    secrets.push('a-long-enough-password');
    await expectNoSecretsInUrlOrStorage();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Atrium' }).waitFor();
  });

  it('shows the login form and the error message from the envelope for a wrong password', async () => {
    await expect(page.getByRole('heading', { name: 'Sign in to Atrium' }).isVisible()).resolves.toBe(true);
    await page.locator('#login-email').fill(user.email);
    await page.locator('#login-password').fill('not-the-password-at-all');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('#login-error', { hasText: 'Email or password is incorrect' }).waitFor();
    expect(await page.locator('#keys-view').isHidden()).toBe(true);
    // Focus goes back to the password field for a retry.
    expect(await page.evaluate<string | undefined>('document.activeElement?.id')).toBe('login-password');
  });

  it('logs in, creates a key, shows it once, counts its calls, lists recent calls and deletes it', async () => {
    // The message goes away once the input is edited into a complete form.
    await page.locator('#login-password').fill('');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('#login-error', { hasText: 'Enter your email and password.' }).waitFor();
    await page.locator('#login-password').fill(user.password);
    expect(await page.locator('#login-error').textContent()).toBe('');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.locator('#keys-empty', { hasText: 'no API keys yet' }).waitFor();
    expect(await page.locator('#whoami').textContent()).toContain(user.email);

    // Create: name, two scopes (with the seed's wording as hints), 30 days.
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByRole('heading', { name: 'Create a key' }).waitFor();
    expect(await page.locator('#key-expiry').inputValue()).toBe('90d'); // preselected
    // Client-side checks, each cleared as soon as it is fixed.
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    await page.locator('#create-error', { hasText: 'Give the key a name.' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('browser key');
    expect(await page.locator('#create-error').textContent()).toBe('');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    await page.locator('#create-error', { hasText: 'Check at least one scope.' }).waitFor();
    await page.getByRole('checkbox', { name: 'Read tasks:read' }).check();
    expect(await page.locator('#create-error').textContent()).toBe('');
    expect(await page.locator('#scope-groups').textContent()).toContain('List, statistics and search of tasks');
    expect(await page.locator('#scopes-hint').textContent()).toContain(':write');
    await page.getByRole('checkbox', { name: 'Read docs:read' }).check();
    await page.getByLabel('Expires').selectOption('30d');
    // Projects come from GET /api/projects; a member types repositories instead of picking them.
    await page.getByRole('checkbox', { name: projectName }).waitFor();
    expect(await page.locator('#repo-text').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Create key', exact: true }).click();

    await page.getByRole('heading', { name: 'Your new key' }).waitFor();
    const key = await page.locator('#created-key').inputValue();
    expect(key).toMatch(/^atr_[0-9A-Za-z]{38}$/);
    secrets.push(key, user.token);
    expect(await page.locator('#created-panel').textContent()).toContain('cannot be shown again');
    // Every client's snippet, in that client's own format, holds no key (a config file is copied, synced and
    // committed): VS Code prompts for it as a password, the others read ATRIUM_API_KEY from the environment.
    // With the key put where each client takes it from, each connects with the MCP SDK client.
    const mcpUrl = `${app.baseUrl}/api/v1/public/mcp`;
    const snippet = async (client: string) => {
      await page.getByLabel('Client', { exact: true }).selectOption({ label: client });
      const text = (await page.locator('#created-mcp').textContent()) ?? '';
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(4, 12));
      return text;
    };
    const envHint = page.locator('#mcp-env');
    const vscode = JSON.parse(await snippet('VS Code'));
    expect(vscode).toEqual({
      inputs: [{ type: 'promptString', id: 'atrium-api-key', description: 'Atrium API key', password: true }],
      servers: { atrium: { type: 'http', url: mcpUrl, headers: { Authorization: 'Bearer ${input:atrium-api-key}' } } },
    });
    expect(await page.locator('#mcp-where').textContent()).toContain('password prompt');
    expect(await envHint.isHidden()).toBe(true);
    // What VS Code sends once the user typed the key into its prompt.
    const vscodeHeaders = {
      Authorization: vscode.servers.atrium.headers.Authorization.replace('${input:atrium-api-key}', key),
    };
    expect(await toolsSeenBy(vscode.servers.atrium.url, vscodeHeaders)).toContain('list_tasks');

    const cursor = JSON.parse(await snippet('Cursor'));
    expect(cursor).toEqual({
      mcpServers: { atrium: { url: mcpUrl, headers: { Authorization: 'Bearer ${env:ATRIUM_API_KEY}' } } },
    });
    expect(await envHint.isVisible()).toBe(true);
    expect(await page.locator('#mcp-env-command').textContent()).toBe(
      'read -rs ATRIUM_API_KEY && export ATRIUM_API_KEY',
    );
    expect(JSON.parse(await snippet('Claude Code (.mcp.json)'))).toEqual({
      mcpServers: { atrium: { type: 'http', url: mcpUrl, headers: { Authorization: 'Bearer ${ATRIUM_API_KEY}' } } },
    });
    // Single quotes: the shell passes ${ATRIUM_API_KEY} on unexpanded, so Claude Code's config file holds the name only.
    expect(await snippet('Claude Code (command)')).toBe(
      `claude mcp add --transport http atrium ${mcpUrl} --header 'Authorization: Bearer \${ATRIUM_API_KEY}'`,
    );
    const openaiCommand = await snippet('OpenAI Responses API');
    expect(openaiCommand).toMatch(/-d @- <<EOF\n[\s\S]*\nEOF$/);
    // The unquoted here-document lets the shell put $ATRIUM_API_KEY into the request body.
    const openai = JSON.parse(/<<EOF\n([\s\S]*)\nEOF$/.exec(openaiCommand)![1].replace('$ATRIUM_API_KEY', key))
      .tools[0];
    expect(openai).toMatchObject({
      type: 'mcp',
      server_label: 'atrium',
      server_url: mcpUrl,
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(await page.locator('#connector-url').textContent()).toBe(mcpUrl);
    expect(await toolsSeenBy(openai.server_url, openai.headers)).toEqual(
      expect.arrayContaining(['list_tasks', 'list_documents']),
    );
    // OAuth for claude.ai and Claude Desktop works today; the page says so.
    expect(await page.locator('#created-panel').textContent()).toContain('sign in with your Atrium account');
    expect(await page.locator('body').textContent()).not.toMatch(/\bsoon\b/i);
    const curl = (await page.locator('#created-curl').textContent()) ?? '';
    expect(curl).toContain(`-H "Authorization: Bearer ${key}"`);
    expect(curl).toContain(`${app.baseUrl}/api/v1/public/mcp/tools`);
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.locator('#status', { hasText: 'Copied' }).waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(key);
    // The message is seen where the user is: on a short window, scrolled down to the curl example, it sits
    // inside the viewport (the status region used to stay at the top of the page, scrolled out of view).
    await page.setViewportSize({ width: 1360, height: 500 });
    // The first "Copied" is still shown: empty the region so the wait below sees the second click's message, not the
    // first one in the moment before the page clears and re-announces it.
    await page.evaluate("document.getElementById('status').textContent = ''");
    await page.getByRole('button', { name: 'Copy curl example' }).click();
    await page.locator('#status', { hasText: 'Copied' }).waitFor();
    expect(await page.evaluate<number>('window.scrollY')).toBeGreaterThan(200);
    const toast = (await page.locator('#status').boundingBox())!;
    expect(toast.height).toBeGreaterThan(10);
    expect(toast.y).toBeGreaterThanOrEqual(0);
    expect(toast.y + toast.height).toBeLessThanOrEqual(500);
    expect(toast.x).toBeGreaterThanOrEqual(0);
    expect(toast.x + toast.width).toBeLessThanOrEqual(1360);
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toContain(`Bearer ${key}`);
    await page.setViewportSize({ width: 1360, height: 900 });

    // The shown key works on Area A with exactly the two checked scopes.
    const tools = await app.http.get('/api/v1/public/mcp/tools').set(bearer(key)).expect(200);
    expect([...tools.body.scopes].sort()).toEqual(['docs:read', 'tasks:read']);
    expect(
      tools.body.tools
        .map((t: { scope: string }) => t.scope)
        .every((s: string) => s === 'tasks:read' || s === 'docs:read'),
    ).toBe(true);

    const row = keyRow('browser key');
    await row.waitFor();
    expect(await row.locator('.key-prefix').textContent()).toBe(`atr_${key.slice(4, 12)}…`);
    expect(await row.locator('.key-expires').textContent()).toMatch(/in (29|30) days/);
    expect(await row.locator('.key-status').textContent()).toBe('active');
    const callsBefore = Number(await row.locator('.key-calls').textContent());

    await app.http
      .post('/api/v1/public/mcp/call')
      .set(bearer(key))
      .send({ name: 'list_tasks', arguments: {} })
      .expect(200);

    // The user tries the key in a client and comes back to the browser window: the columns catch up without a
    // reload. (Headless Chromium keeps every tab "visible", so the window is minimised and restored instead,
    // with Playwright's emulation of an always-focused page turned off for the while.)
    const windowOf = await context.newCDPSession(page);
    await windowOf.send('Emulation.setFocusEmulationEnabled', { enabled: false });
    const { windowId } = await windowOf.send('Browser.getWindowForTarget');
    const windowFocused = async (focused: boolean) => {
      for (let waited = 0; (await page.evaluate<boolean>('document.hasFocus()')) !== focused; waited += 50) {
        if (waited >= 5_000) throw new Error(`the window did not ${focused ? 'get' : 'lose'} the focus`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await windowOf.send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'minimized' } });
    await windowFocused(false);
    await windowOf.send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'normal' } });
    await windowFocused(true);
    await windowOf.send('Emulation.setFocusEmulationEnabled', { enabled: true });
    await windowOf.detach();
    // Polled through the locator, not page.waitForFunction: when its first check fails, Playwright re-runs
    // a predicate by evaluating a string in the page, which the page's CSP (script-src 'self') refuses.
    const callsShown = () => row.locator('.key-calls').textContent().then(Number);
    for (let waited = 0; (await callsShown()) <= callsBefore; waited += 100) {
      if (waited >= 10_000)
        throw new Error(
          `call count still ${await callsShown()} (was ${callsBefore}) 10 s after the window got the focus back`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await row.locator('.key-last-used').textContent()).not.toBe('Never');
    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`account page screenshot: ${SCREENSHOT}`);

    // A phone (375 px): nothing wider than the screen, and the row's Delete button on screen.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(OUTPUT, 'account-page-1280.png'), fullPage: true });
    await page.setViewportSize({ width: 375, height: 800 });
    const tooWide = await page.evaluate<string[]>(
      `[...document.querySelectorAll('body *')].filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > 375).map((e) => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`,
    );
    expect(tooWide).toEqual([]);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    const deleteBox = await row.getByRole('button', { name: 'Delete browser key' }).boundingBox();
    expect(deleteBox).not.toBeNull();
    expect(deleteBox!.x).toBeGreaterThanOrEqual(0);
    expect(deleteBox!.x + deleteBox!.width).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(OUTPUT, 'account-page-375.png'), fullPage: true });
    console.log(`account page screenshots at 1280 and 375 px: ${OUTPUT}`);
    await page.setViewportSize({ width: 1360, height: 900 });

    // Recent calls of the key.
    await row.getByRole('button', { name: 'Recent calls of browser key' }).click();
    await page.getByRole('heading', { name: 'Recent calls of "browser key"' }).waitFor();
    const call = page.locator('#usage-body tr', { has: page.locator('.usage-tool', { hasText: 'list_tasks' }) });
    await call.first().waitFor();
    expect(await call.first().locator('.usage-status').textContent()).toBe('200');
    expect(await call.first().locator('.usage-duration').textContent()).toMatch(/^\d+ ms$/);
    await page.keyboard.press('Escape');
    expect(await page.locator('#usage-panel').isHidden()).toBe(true);

    // Delete, first cancelling the confirmation, then confirming it.
    await row.getByRole('button', { name: 'Delete browser key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete API key?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await dialog.isHidden()).toBe(true);
    expect(await row.locator('.key-status').textContent()).toBe('active');
    await row.getByRole('button', { name: 'Delete browser key' }).click();
    await dialog.getByRole('button', { name: 'Delete key' }).click();
    await page.locator('#status', { hasText: 'deleted' }).waitFor();
    // Revoked keys collapse behind a toggle; with the last key deleted the list says so instead of showing
    // an empty table.
    await row.waitFor({ state: 'hidden' });
    const empty = page.locator('#keys-empty');
    await empty.waitFor({ state: 'visible' });
    expect(await empty.textContent()).toContain('You have no API keys left');
    expect(await page.locator('#keys-table').isHidden()).toBe(true);
    const toggle = page.getByRole('button', { name: 'Show revoked keys (1)' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await toggle.click();
    await row.locator('.key-status', { hasText: 'revoked' }).waitFor();
    expect(await empty.isHidden()).toBe(true);
    expect(await row.getByRole('button', { name: 'Delete browser key' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Hide revoked keys (1)' }).click();
    await row.waitFor({ state: 'hidden' });
    await empty.waitFor({ state: 'visible' });

    const refused = await app.http.get('/api/v1/public/mcp/tools').set(bearer(key)).expect(401);
    expect(refused.body.error.code).toBe('revoked_api_key');

    await expectNoSecretsInUrlOrStorage();
  });

  it('creates a key limited to client addresses, rolls it with a chosen overlap and shows the new secret once', async () => {
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('rolling key');
    await page.getByRole('checkbox', { name: 'Read tasks:read' }).check();
    await page.getByLabel(/Allowed client addresses/).fill('127.0.0.1, ::1');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    await page.getByRole('heading', { name: 'Your new key' }).waitFor();
    const oldKey = await page.locator('#created-key').inputValue();
    secrets.push(oldKey);
    await page.getByRole('button', { name: 'I have saved the key' }).click();
    const row = keyRow('rolling key');
    await row.locator('.pins-note', { hasText: 'Only from 127.0.0.1/32, ::1/128' }).waitFor();

    await row.getByRole('button', { name: 'Roll rolling key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Roll API key?' });
    await dialog.waitFor();
    await dialog.getByLabel('The old key keeps working for').selectOption('1h');
    await dialog.getByRole('button', { name: 'Roll key' }).click();
    await page.getByRole('heading', { name: 'Your new key' }).waitFor();
    const newKey = await page.locator('#created-key').inputValue();
    expect(newKey).toMatch(/^atr_[0-9A-Za-z]{38}$/);
    expect(newKey).not.toBe(oldKey);
    secrets.push(newKey);
    // Both work during the overlap; the old row says when it stops and offers no second roll.
    await app.http.get('/api/v1/public/mcp/tools').set(bearer(newKey)).expect(200);
    await app.http.get('/api/v1/public/mcp/tools').set(bearer(oldKey)).expect(200);
    const oldRow = page.locator('#keys-body tr', {
      has: page.locator('.pins-note', { hasText: 'Rolled: stops working' }),
    });
    await oldRow.waitFor();
    expect(await oldRow.getByRole('button', { name: 'Roll rolling key' }).count()).toBe(0);
    expect(
      await page.locator('#keys-body tr', { has: page.getByRole('button', { name: 'Roll rolling key' }) }).count(),
    ).toBe(1);

    // Shown once: gone from the page after Done, and never in the list.
    await page.getByRole('button', { name: 'I have saved the key' }).click();
    expect(await page.locator('#created-key').inputValue()).toBe('');
    expect(await page.content()).not.toContain(newKey);
    await page.getByRole('button', { name: 'Reload list' }).click();
    expect(await page.content()).not.toContain(newKey);
    await expectNoSecretsInUrlOrStorage();
  });

  it('has a favicon: /favicon.ico and every icon the page links answer 200 with an image', async () => {
    const icons = await page
      .locator('link[rel="icon"]')
      .evaluateAll((links) => links.map((l) => l.getAttribute('href')));
    expect(icons).toEqual(expect.arrayContaining(['/favicon.ico']));
    for (const href of new Set([...icons, '/favicon.ico'])) {
      const res = await page.request.get(`${app.baseUrl}${href}`);
      expect([href, res.status()]).toEqual([href, 200]);
      expect(res.headers()['content-type']).toMatch(/^image\//);
      expect((await res.body()).length).toBeGreaterThan(100);
    }
  });

  it('shows the API error message when creation is refused', async () => {
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('bad repo key');
    await page.getByRole('checkbox', { name: 'Read github:read' }).check();
    await page.getByLabel(/Repositories/).fill('not a repo name');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    await page.locator('#create-error', { hasText: 'owner/name' }).waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();
  });

  it('creates a read-only key with a tool allowlist, shows both in the list, and the key lists only those tools', async () => {
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByLabel('Name', { exact: true }).fill('narrow key');
    await page.getByRole('checkbox', { name: 'Read tasks:read' }).check();
    await page.getByRole('checkbox', { name: 'Write tasks:write' }).check();
    await page.locator('#key-read-only').check();
    // An unknown tool name: the API's 400 names it.
    await page.getByLabel(/Only these tools/).fill('list_tasks, drop_everything');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    await page.locator('#create-error', { hasText: 'drop_everything' }).waitFor();
    await page.getByLabel(/Only these tools/).fill('list_tasks get_task, create_task');
    await page.getByRole('button', { name: 'Create key', exact: true }).click();
    await page.getByRole('heading', { name: 'Your new key' }).waitFor();
    const key = await page.locator('#created-key').inputValue();
    secrets.push(key);
    await page.getByRole('button', { name: 'I have saved the key' }).click();
    await keyRow('narrow key').locator('.key-restriction').waitFor();
    expect(await keyRow('narrow key').locator('.key-restriction').textContent()).toBe(
      'Read-only; only tools: list_tasks, get_task, create_task',
    );
    // What an MCP client configured with this key sees: the allowlisted tools that only read.
    expect(await toolsSeenBy(`${app.baseUrl}/api/v1/public/mcp`, { Authorization: `Bearer ${key}` })).toEqual([
      'list_tasks',
      'get_task',
    ]);
    await expectNoSecretsInUrlOrStorage();
  });

  it('logs out, and returns to the login form when the access token is refused (401)', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Atrium' }).waitFor();
    expect(await page.locator('#keys-view').isHidden()).toBe(true);

    await page.locator('#login-email').fill(user.email);
    await page.locator('#login-password').fill(user.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();

    // An expired access token: the server answers 401 in its envelope.
    await page.route(/\/api\/api-keys(\?.*)?$/, (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({
          success: false,
          data: null,
          error: { code: 'AUTH_INVALID', message: 'The access token has expired' },
          traceId: 't',
        }),
      }),
    );
    await page.getByRole('button', { name: 'Reload list' }).click();
    await page.locator('#login-error', { hasText: 'session has expired' }).waitFor();
    expect(await page.locator('#keys-view').isHidden()).toBe(true);
    expect(await page.evaluate<string | undefined>('document.activeElement?.id')).toBe('login-email');
    await page.unroute(/\/api\/api-keys(\?.*)?$/);
    await expectNoSecretsInUrlOrStorage();
  });

  it('offers an admin the registered repositories (GET /api/admin/github/repos) instead of a free-text field', async () => {
    await page.locator('#login-email').fill(admin.email);
    await page.locator('#login-password').fill(admin.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    const repoList = page.waitForResponse((res) => res.url().includes('/api/admin/github/repos'));
    await page.getByRole('button', { name: 'Create a key' }).click();
    expect((await repoList).status()).toBe(200);
    await page.locator('#repo-pins', { hasText: 'No repositories are registered yet' }).waitFor();
    expect(await page.locator('#repo-text-field').isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Atrium' }).waitFor();
    await expectNoSecretsInUrlOrStorage();
  });

  it('lets an admin edit the admin policy (400 shown beside the form, saved values kept after a reload); a member never sees it', async () => {
    const logIn = async (who: TestUser) => {
      await page.locator('#login-email').fill(who.email);
      await page.locator('#login-password').fill(who.password);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    };
    const policyNow = async () =>
      (await app.http.get('/api/admin/policy').set(bearer(admin.token)).expect(200)).body.data as Record<
        string,
        unknown
      >;
    // Nothing saved it yet: the defaults, which the test ends by saving back.
    const initial = await policyNow();
    expect(initial).toMatchObject({ maxKeyLifetimeDays: null, allowedIps: null, updatedAt: null });
    const policyAsked: string[] = [];
    const onRequest = (req: { url(): string }) => {
      if (req.url().includes('/api/admin/policy')) policyAsked.push(req.url());
    };
    page.on('request', onRequest);
    try {
      await logIn(user);
      await page.locator('#apps-section').waitFor();
      expect(await page.locator('#policy-section').isHidden()).toBe(true);
      expect(await page.getByRole('button', { name: 'Admin policy' }).count()).toBe(0);
      expect(policyAsked).toEqual([]);
      await page.getByRole('button', { name: 'Log out' }).click();

      await logIn(admin);
      const section = page.locator('#policy-section');
      await section.getByRole('heading', { name: 'Admin policy' }).waitFor();
      await section.locator('#policy-updated', { hasText: 'defaults' }).waitFor();
      expect(await page.locator('#policy-max-lifetime').isDisabled()).toBe(true);
      await page.getByLabel('Limit how long a new API key may live').check();
      await page.getByLabel('Longest key lifetime, in days').fill('30');
      await page.getByLabel('Limit the client addresses tool calls may come from').check();
      await page.getByLabel('Addresses tool calls may come from', { exact: true }).fill('10.0.0.0/99');
      await page.getByLabel('Limit the apps users may connect (OAuth clients)').check();
      await page.getByLabel('Allowed apps').fill('claude.ai\nMy Desktop App');
      await page.getByLabel('Keys and apps with a write scope must confirm writes').check();
      await page.getByLabel('Most API keys and connected apps per user').fill('7');
      await page.getByRole('button', { name: 'Save policy' }).click();
      // The server's 400 names the field, next to the form; nothing was saved.
      await page.locator('#policy-error', { hasText: 'allowedIps' }).waitFor();
      expect(await policyNow()).toEqual(initial);

      await page.getByLabel('Addresses tool calls may come from', { exact: true }).fill('10.0.0.0/8, 127.0.0.1, ::1');
      expect(await page.locator('#policy-error').textContent()).toBe('');
      await page.getByRole('button', { name: 'Save policy' }).click();
      await page.locator('#status', { hasText: 'Admin policy saved.' }).waitFor();

      // A reload signs out (the token lives in memory only); the saved policy comes back from the server.
      await page.reload();
      await logIn(admin);
      await section.locator('#policy-updated', { hasText: 'Last saved' }).waitFor();
      expect(await page.getByLabel('Longest key lifetime, in days').inputValue()).toBe('30');
      expect(await page.getByLabel('Addresses tool calls may come from', { exact: true }).inputValue()).toBe(
        '10.0.0.0/8, 127.0.0.1/32, ::1/128',
      );
      expect(await page.getByLabel('Allowed apps').inputValue()).toBe('claude.ai\nMy Desktop App');
      expect(await page.getByLabel('Keys and apps with a write scope must confirm writes').isChecked()).toBe(true);
      expect(await page.getByLabel('Most API keys and connected apps per user').inputValue()).toBe('7');
      expect(await page.getByLabel('Limit the scopes a new API key may carry').isChecked()).toBe(false);
      await section.screenshot({ path: join(OUTPUT, 'account-page-policy.png') });

      // Unchecking a limit clears it to null.
      await page.getByLabel('Limit how long a new API key may live').uncheck();
      await page.getByLabel('Limit the client addresses tool calls may come from').uncheck();
      await page.getByLabel('Limit the apps users may connect (OAuth clients)').uncheck();
      await page.getByLabel('Keys and apps with a write scope must confirm writes').uncheck();
      await page.getByLabel('Most API keys and connected apps per user').fill(String(initial.maxCredentialsPerUser));
      await page.getByRole('button', { name: 'Save policy' }).click();
      await page.locator('#status', { hasText: 'Admin policy saved.' }).waitFor();
      expect(await policyNow()).toMatchObject({ ...initial, updatedAt: expect.any(String), updatedBy: admin.id });
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.getByRole('heading', { name: 'Sign in to Atrium' }).waitFor();
      expect(await page.locator('#policy-section').isHidden()).toBe(true);
    } finally {
      page.off('request', onRequest);
    }
  });
});
