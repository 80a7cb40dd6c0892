// Atrium consent page (GET /oauth/authorize): sign in, see which app asks and where it returns,
// narrow scopes, pin projects/repositories and client addresses, choose an expiry, approve or deny. Plain ES module.
// The access token lives only in memory, as on the account page.

const $ = (id) => document.getElementById(id);
let token = null;
let request = null;

function readRequest() {
  try {
    const parsed = JSON.parse($('authorization-request').textContent);
    return parsed && typeof parsed === 'object' && parsed.clientId ? parsed : null;
  } catch {
    return null;
  }
}

async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  const payload = await res.json().catch(() => null);
  if (res.ok && payload && payload.success) return payload.data;
  const message = payload && payload.error ? payload.error.message : `Request failed (HTTP ${res.status})`;
  throw new Error(message);
}

function showError(text) {
  $('consent-error').textContent = text;
}

function fillClientName() {
  for (const el of document.querySelectorAll('.consent-client-name')) el.textContent = request.clientName;
}

async function onLogin(event) {
  event.preventDefault();
  showError('');
  try {
    const result = await call('POST', '/api/auth/login', { email: $('consent-email').value, password: $('consent-password').value });
    token = result.accessToken;
    $('consent-password').value = '';
    await showConsent();
  } catch (err) {
    showError(err.message);
  }
}

function checkbox(container, name, value, label, checked) {
  const id = `${name}-${container.children.length}`;
  const row = document.createElement('div');
  row.className = 'check';
  const input = document.createElement('input');
  Object.assign(input, { type: 'checkbox', id, name, value, checked });
  const text = document.createElement('label');
  text.htmlFor = id;
  text.textContent = label;
  row.append(input, text);
  container.append(row);
}

async function loadProjects() {
  const box = $('consent-projects');
  const projects = [];
  let cursor = null;
  try {
    do {
      const page = await call('GET', `/api/projects?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      projects.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor && projects.length < 1000);
  } catch (err) {
    box.textContent = `Projects could not be loaded: ${err.message}`;
    return;
  }
  box.replaceChildren();
  if (projects.length === 0) box.textContent = 'You are not a member of any project.';
  for (const p of projects) checkbox(box, 'projectIds', p.id, p.name, false);
}

async function showConsent() {
  $('consent-login').hidden = true;
  $('consent-view').hidden = false;
  $('consent-redirect-host').textContent = request.redirectHost;
  const scopes = $('consent-scopes');
  scopes.replaceChildren();
  // What each scope allows comes from the server's catalog (GET /api/api-keys/scopes); the name alone if it cannot be read.
  const catalog = await call('GET', '/api/api-keys/scopes').catch(() => ({ items: [] }));
  const allows = new Map(catalog.items.map((s) => [s.name, s.allows]));
  for (const scope of request.scopes) checkbox(scopes, 'scopes', scope, allows.has(scope) ? `${scope}: ${allows.get(scope)}` : scope, true);
  $('consent-title').focus();
  await loadProjects();
}

function checked(name) {
  return [...document.querySelectorAll(`input[name="${name}"]:checked`)].map((el) => el.value);
}

async function answer(approve) {
  showError('');
  const body = {
    clientId: request.clientId,
    redirectUri: request.redirectUri,
    codeChallenge: request.codeChallenge,
    codeChallengeMethod: request.codeChallengeMethod,
    scope: request.scopes.join(' '),
    resource: request.resource,
    approve,
  };
  if (request.state !== null) body.state = request.state;
  if (approve) {
    body.scopes = checked('scopes');
    if (body.scopes.length === 0) return showError('Check at least one permission, or deny.');
    const projectIds = checked('projectIds');
    if (projectIds.length) body.projectIds = projectIds;
    const repos = $('consent-repos').value.split(',').map((r) => r.trim()).filter(Boolean);
    if (repos.length) body.repos = repos;
    body.expiresIn = $('consent-expiry').value;
    if ($('consent-confirm-writes').checked) body.confirmWrites = true;
    if ($('consent-read-only').checked) body.readOnly = true;
    const tools = [...new Set($('consent-tools').value.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean))];
    if (tools.length) body.tools = tools;
    const allowedIps = [...new Set($('consent-allowed-ips').value.split(/[\s,]+/).map((a) => a.trim()).filter(Boolean))];
    if (allowedIps.length) body.allowedIps = allowedIps;
  }
  try {
    const { redirectTo } = await call('POST', '/api/oauth/authorize', body);
    $('consent-status').textContent = approve ? 'Approved; returning to the app…' : 'Denied; returning to the app…';
    token = null;
    window.location.assign(redirectTo);
  } catch (err) {
    showError(err.message);
  }
}

function init() {
  request = readRequest();
  if (!request) {
    showError('Open this page from the app you want to connect (its "connect" or "sign in" link).');
    return;
  }
  fillClientName();
  $('consent-login').hidden = false;
  $('consent-login-form').addEventListener('submit', onLogin);
  $('consent-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void answer(true);
  });
  $('consent-deny').addEventListener('click', () => void answer(false));
  $('consent-email').focus();
}

init();
