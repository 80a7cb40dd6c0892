// Atrium account page: sign in, manage personal API keys. Plain ES module, no build step.
//
// Secrets policy: the access token lives only in the `session` variable below (memory). It is never
// written to localStorage, sessionStorage, cookies or the URL, so a reload signs the user out. A newly
// created API key is held only in the "new key" panel until the user dismisses it.

import { mcpClientSnippets, SET_KEY_VARIABLE } from './mcp-snippets.js';

/**
 * The scopes a key can carry, from GET /api/api-keys/scopes (the server's catalog, declared by the tool
 * providers): [{name, group, access, allows, exampleTool}]. Loaded once per page view after sign-in.
 */
let scopeCatalog = null;

/** @type {{token: string, user: {id: string, email: string, name: string, role: string}} | null} */
let session = null;
/** Keys by id from the last list, for the delete dialog and the usage panel. */
let keysById = new Map();

const $ = (id) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing element #${id}`);
  return el;
};

class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

class SessionExpired extends Error {}

/** Calls an Area B route and unwraps the envelope; a 401 ends the session and returns to the login form. */
async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (session) headers.Authorization = `Bearer ${session.token}`;
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'NETWORK', 'Atrium cannot be reached; check your connection and try again.');
  }
  let payload = null;
  try {
    payload = await res.json();
  } catch {
    payload = null;
  }
  if (res.ok && payload && payload.success !== false) return payload.data;
  const error = payload && payload.error ? payload.error : {};
  const message = error.message || `Request failed (HTTP ${res.status})`;
  if (res.status === 401 && session) {
    endSession('Your session has expired. Please log in again.');
    throw new SessionExpired(message);
  }
  throw new ApiError(res.status, error.code || 'HTTP_' + res.status, message, error.details);
}

/** The envelope's message plus any per-field details, as plain text. */
function describeError(err) {
  if (!(err instanceof ApiError)) return String(err && err.message ? err.message : err);
  const parts = [err.message];
  if (Array.isArray(err.details)) {
    for (const d of err.details) if (d && d.message) parts.push(d.message);
  }
  return parts.join(' — ');
}

// ---- messages -------------------------------------------------------------------------------------

/** How long a status message stays on screen (a toast fixed to the viewport, styles.css .status). */
const STATUS_SHOWN_MS = 6000;
let statusTimer = 0;

function announce(text) {
  $('error').textContent = '';
  // Clearing first makes screen readers repeat an identical message.
  $('status').textContent = '';
  window.clearTimeout(statusTimer);
  statusTimer = window.setTimeout(() => {
    $('status').textContent = text;
    statusTimer = window.setTimeout(() => ($('status').textContent = ''), STATUS_SHOWN_MS);
  }, 30);
}

function showError(text) {
  $('status').textContent = '';
  $('error').textContent = text;
}

function clearMessages() {
  $('status').textContent = '';
  $('error').textContent = '';
}

/** Runs an action, reporting failures in the given element (or the page's alert region). */
async function guarded(action, errorEl) {
  try {
    return await action();
  } catch (err) {
    if (err instanceof SessionExpired) return undefined;
    if (errorEl) errorEl.textContent = describeError(err);
    else showError(describeError(err));
    return undefined;
  }
}

// ---- views -----------------------------------------------------------------------------------------

function showLogin(message) {
  $('app-nav').hidden = true;
  $('keys-view').hidden = true;
  $('login-view').hidden = false;
  $('login-error').textContent = message || '';
  $('login-password').value = '';
  $('login-email').focus();
}

function endSession(message) {
  session = null;
  keysById = new Map();
  clearSecretsFromPage();
  $('keys-body').replaceChildren();
  $('usage-body').replaceChildren();
  $('apps-body').replaceChildren();
  $('create-panel').hidden = true;
  $('usage-panel').hidden = true;
  hidePolicy();
  const dialog = $('confirm-dialog');
  if (dialog.open) dialog.close('cancel');
  clearMessages();
  showLogin(message);
}

async function showKeysView() {
  $('login-view').hidden = true;
  $('app-nav').hidden = false;
  $('whoami').textContent = `${session.user.name} (${session.user.email})`;
  $('keys-view').hidden = false;
  $('keys-title').focus();
  await loadScopeCatalog();
  await loadKeys();
  await loadConnectedApps();
  await loadPolicy();
}

// ---- login / logout --------------------------------------------------------------------------------

const LOGIN_INCOMPLETE = 'Enter your email and password.';

async function onLogin(event) {
  event.preventDefault();
  const email = $('login-email').value.trim();
  const password = $('login-password').value;
  const errorEl = $('login-error');
  errorEl.textContent = '';
  if (!email || !password) {
    errorEl.textContent = LOGIN_INCOMPLETE;
    (email ? $('login-password') : $('login-email')).focus();
    return;
  }
  const submit = $('login-submit');
  submit.disabled = true;
  try {
    const data = await api('POST', '/api/auth/login', { email, password });
    session = { token: data.accessToken, user: data.user };
    $('login-password').value = '';
    await showKeysView();
    announce(`Logged in as ${data.user.email}.`);
  } catch (err) {
    errorEl.textContent = describeError(err);
    $('login-password').focus();
  } finally {
    submit.disabled = false;
  }
}

// ---- sign-up (only when the installation allows it: GET /api/auth/signup) ------------------------------

function signupProblem() {
  if (!$('signup-name').value.trim()) return { text: 'Enter your name.', field: 'signup-name' };
  if (!/^[^@\s]+@[^@\s]+$/.test($('signup-email').value.trim())) return { text: 'Enter a valid email address.', field: 'signup-email' };
  if ($('signup-password').value.length < 10) return { text: 'Choose a password of at least 10 characters.', field: 'signup-password' };
  return null;
}

async function onSignup(event) {
  event.preventDefault();
  const errorEl = $('signup-error');
  errorEl.textContent = '';
  const problem = signupProblem();
  if (problem) {
    errorEl.textContent = problem.text;
    $(problem.field).focus();
    return;
  }
  const email = $('signup-email').value.trim();
  const password = $('signup-password').value;
  const submit = $('signup-submit');
  submit.disabled = true;
  try {
    await api('POST', '/api/auth/register', { name: $('signup-name').value.trim(), email, password });
    const data = await api('POST', '/api/auth/login', { email, password });
    session = { token: data.accessToken, user: data.user };
    $('signup-form').reset();
    await showKeysView();
    announce(`Account created. You are logged in as ${data.user.email}.`);
  } catch (err) {
    errorEl.textContent = describeError(err);
    $('signup-email').focus();
  } finally {
    submit.disabled = false;
  }
}

async function showSignupIfOpen() {
  try {
    const res = await fetch('/api/auth/signup', { headers: { Accept: 'application/json' }, credentials: 'omit', cache: 'no-store' });
    const payload = await res.json();
    $('signup-section').hidden = !(res.ok && payload.data && payload.data.open === true);
  } catch {
    $('signup-section').hidden = true; // an older server, or offline: signing in still works
  }
}

/**
 * A form's error message goes away as soon as what it says is fixed, not on the next submit: `problem`
 * re-checks the form on every edit and returns the message the form would show now (or ''). A shown
 * message that is no longer the current problem is cleared (the next problem waits for the next
 * submit); a server message is cleared by any edit.
 */
function clearErrorWhenFixed(formId, errorId, problem) {
  const recheck = () => {
    const shown = $(errorId).textContent;
    if (shown && problem() !== shown) $(errorId).textContent = '';
  };
  $(formId).addEventListener('input', recheck);
  $(formId).addEventListener('change', recheck);
}

function onLogout() {
  endSession('');
  announce('You are logged out.');
}

// ---- key list --------------------------------------------------------------------------------------

function formatDate(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

function timeEl(iso, fallback) {
  if (!iso) return document.createTextNode(fallback);
  const t = document.createElement('time');
  t.dateTime = iso;
  t.textContent = formatDate(iso);
  return t;
}

/** `label` names the column on narrow screens, where each row is shown as a card (styles.css). */
function cell(row, content, className, label) {
  const td = document.createElement('td');
  if (className) td.className = className;
  if (label) td.dataset.label = label;
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  row.append(td);
  return td;
}

function expiryText(key) {
  if (!key.expiresAt) return 'Never';
  const date = formatDate(key.expiresAt);
  if (key.status === 'expired') return `${date} (expired)`;
  const days = key.daysUntilExpiry;
  return `${date} (${days === 1 ? 'in 1 day' : `in ${days} days`})`;
}

/** A row's action button; the list's click handler finds the action and the key by the data attributes. */
function keyButton(key, action, text, label, className) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = className;
  button.dataset.action = action;
  button.dataset.keyId = key.id;
  button.textContent = text;
  button.setAttribute('aria-label', label);
  return button;
}

function renderKeys(keys) {
  const body = $('keys-body');
  // A refresh in the background must not take the keyboard focus away from a row's button.
  const focused = document.activeElement instanceof HTMLElement && body.contains(document.activeElement) ? document.activeElement.dataset : null;
  body.replaceChildren();
  keysById = new Map(keys.map((k) => [k.id, k]));
  for (const key of keys) {
    const tr = document.createElement('tr');
    tr.dataset.keyId = key.id;
    tr.dataset.status = key.status;
    // Revoked keys stay listed (their history is useful) but collapse behind the toggle.
    if (key.status === 'revoked') tr.hidden = !showRevoked;
    const th = document.createElement('th');
    th.scope = 'row';
    th.className = 'key-name';
    th.textContent = key.name;
    tr.append(th);
    const prefix = document.createElement('code');
    prefix.textContent = `atr_${key.prefix}…`;
    cell(tr, prefix, 'key-prefix', 'Prefix');
    const scopes = document.createElement('ul');
    scopes.className = 'scope-list';
    for (const s of key.scopes) {
      const li = document.createElement('li');
      li.textContent = s;
      if (s.endsWith(':write')) li.className = 'scope-write';
      scopes.append(li);
    }
    const pins = [];
    if (key.projectIds && key.projectIds.length) pins.push(`${key.projectIds.length} project${key.projectIds.length === 1 ? '' : 's'}`);
    if (key.repos && key.repos.length) pins.push(key.repos.join(', '));
    const scopesCell = cell(tr, scopes, 'key-scopes', 'Scopes');
    if (pins.length) {
      const p = document.createElement('p');
      p.className = 'pins-note';
      p.textContent = `Limited to ${pins.join('; ')}`;
      scopesCell.append(p);
    }
    if (key.confirmWrites) {
      const p = document.createElement('p');
      p.className = 'pins-note';
      p.textContent = 'Writes need your confirmation';
      scopesCell.append(p);
    }
    const notes = [];
    const narrowing = restrictionText(key);
    if (narrowing) notes.push({ text: narrowing, className: 'pins-note key-restriction' });
    if (key.allowedIps && key.allowedIps.length) notes.push({ text: `Only from ${key.allowedIps.join(', ')}` });
    if (key.retiresAt) notes.push({ text: `Rolled: stops working ${new Date(key.retiresAt).toLocaleString()}` });
    if (key.outOfPolicy && key.outOfPolicy.length)
      notes.push({ text: `Outside the admin policy (${key.outOfPolicy.join(', ')})` });
    for (const note of notes) {
      const p = document.createElement('p');
      p.className = note.className || 'pins-note';
      p.textContent = note.text;
      scopesCell.append(p);
    }
    cell(tr, timeEl(key.createdAt, ''), 'key-created', 'Created');
    cell(tr, expiryText(key), 'key-expires', 'Expires');
    cell(tr, timeEl(key.lastUsedAt, 'Never'), 'key-last-used', 'Last used');
    cell(tr, String(key.callCount), 'key-calls', 'Calls');
    const badge = document.createElement('span');
    badge.className = `badge badge-${key.status}`;
    badge.textContent = key.status;
    cell(tr, badge, 'key-status', 'Status');

    const actions = document.createElement('div');
    actions.className = 'row-actions';
    actions.append(keyButton(key, 'usage', 'Recent calls', `Recent calls of ${key.name}`, 'secondary small'));
    // A rolled key keeps working until its overlap ends, but is rolled only once.
    if (key.status === 'active' && !key.rolledTo) actions.append(keyButton(key, 'roll', 'Roll', `Roll ${key.name}`, 'secondary small'));
    if (key.status !== 'revoked') actions.append(keyButton(key, 'delete', 'Delete', `Delete ${key.name}`, 'danger small'));
    cell(tr, actions, 'key-actions');
    body.append(tr);
  }
  if (focused && focused.keyId) {
    body.querySelector(`button[data-action="${focused.action}"][data-key-id="${CSS.escape(focused.keyId)}"]`)?.focus();
  }
  updateRevokedToggle();
  updateKeysEmptyState();
}

/** With no key listed (none yet, or every one deleted and revoked keys collapsed), a sentence instead of an empty table. */
function updateKeysEmptyState() {
  const keys = [...keysById.values()];
  const listed = keys.filter((k) => showRevoked || k.status !== 'revoked').length;
  const empty = $('keys-empty');
  empty.textContent = keys.length === 0
    ? 'You have no API keys yet. Create one to connect an AI client or a script.'
    : 'You have no API keys left: every key you created is deleted. Create a new one to connect an AI client or a script.';
  empty.hidden = listed > 0;
  $('keys-table').hidden = listed === 0;
}

/** Whether revoked keys are listed; off by default so the list shows the keys that still work. */
let showRevoked = false;

function updateRevokedToggle() {
  const revoked = [...keysById.values()].filter((k) => k.status === 'revoked').length;
  const toggle = $('toggle-revoked');
  toggle.hidden = revoked === 0;
  toggle.setAttribute('aria-expanded', String(showRevoked));
  toggle.textContent = `${showRevoked ? 'Hide' : 'Show'} revoked keys (${revoked})`;
}

function onToggleRevoked() {
  showRevoked = !showRevoked;
  for (const tr of document.querySelectorAll('#keys-body tr[data-status="revoked"]')) tr.hidden = !showRevoked;
  updateRevokedToggle();
  updateKeysEmptyState();
}

/** Every key of the account: the list is paged ({items, nextCursor}), so follow the cursor to the end. */
async function fetchAllKeys() {
  const keys = [];
  let cursor = null;
  do {
    const page = await api('GET', `/api/api-keys?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    keys.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return keys;
}

async function loadKeys() {
  const keys = await guarded(fetchAllKeys);
  if (keys) renderKeys(keys);
  return keys;
}

async function onRefresh() {
  const keys = await loadKeys();
  if (keys) announce(`Key list reloaded: ${keys.length} key${keys.length === 1 ? '' : 's'}.`);
}

// ---- create ----------------------------------------------------------------------------------------

async function loadScopeCatalog() {
  if (scopeCatalog) return;
  const catalog = await guarded(() => api('GET', '/api/api-keys/scopes'));
  if (!catalog) return;
  scopeCatalog = catalog.items;
  buildScopeCheckboxes(scopeCatalog);
}

/** The catalog's scopes grouped under their headings, in catalog order. */
function scopeGroups(scopes) {
  const groups = new Map();
  for (const scope of scopes) {
    if (!groups.has(scope.group)) groups.set(scope.group, []);
    groups.get(scope.group).push(scope);
  }
  return [...groups].map(([label, members]) => ({ label, scopes: members }));
}

function buildScopeCheckboxes(scopes) {
  const container = $('scope-groups');
  container.replaceChildren();
  for (const group of scopeGroups(scopes)) {
    const fs = document.createElement('fieldset');
    fs.className = 'scope-group';
    const legend = document.createElement('legend');
    legend.textContent = group.label;
    fs.append(legend);
    for (const scope of group.scopes) {
      const id = `scope-${scope.name.replace(':', '-')}`;
      const wrap = document.createElement('div');
      wrap.className = 'check';
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.id = id;
      input.name = 'scopes';
      input.value = scope.name;
      input.setAttribute('aria-describedby', `${id}-hint`);
      const label = document.createElement('label');
      label.htmlFor = id;
      const access = scope.access;
      const strong = document.createElement('span');
      strong.className = 'scope-access';
      strong.textContent = access === 'write' ? 'Write' : 'Read';
      const code = document.createElement('code');
      code.textContent = scope.name;
      label.append(strong, ' ', code);
      const hint = document.createElement('span');
      hint.id = `${id}-hint`;
      hint.className = 'hint scope-hint';
      hint.textContent = access === 'write' ? `${scope.allows}. Only if the client must change data.` : `${scope.allows}.`;
      wrap.append(input, label, hint);
      fs.append(wrap);
    }
    container.append(fs);
  }
}

function checkboxList(containerId, name, items) {
  const container = $(containerId);
  container.replaceChildren();
  for (const item of items) {
    const wrap = document.createElement('div');
    wrap.className = 'check';
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.name = name;
    input.value = item.value;
    input.id = `${name}-${item.value.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const label = document.createElement('label');
    label.htmlFor = input.id;
    label.textContent = item.label;
    wrap.append(input, label);
    container.append(wrap);
  }
}

function note(containerId, text) {
  const p = document.createElement('p');
  p.className = 'hint';
  p.textContent = text;
  $(containerId).replaceChildren(p);
}

/** All pages of an Area B list (bounded: pins are a convenience, not a browser for huge lists). */
async function listAll(path) {
  const items = [];
  let cursor = null;
  for (let page = 0; page < 10; page += 1) {
    const sep = path.includes('?') ? '&' : '?';
    const data = await api('GET', `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    items.push(...(data.items || []));
    cursor = data.nextCursor;
    if (!cursor) break;
  }
  return items;
}

async function loadPins() {
  note('project-pins', 'Loading projects…');
  try {
    const projects = await listAll('/api/projects');
    if (projects.length === 0) note('project-pins', 'You are not a member of any project yet.');
    else checkboxList('project-pins', 'projectIds', projects.map((p) => ({ value: p.id, label: p.name })));
  } catch (err) {
    if (err instanceof SessionExpired) return;
    note('project-pins', `Projects could not be loaded: ${describeError(err)}`);
  }

  const admin = isAdmin();
  $('repo-text-field').hidden = admin;
  if (!admin) {
    $('repo-pins').replaceChildren();
    return;
  }
  note('repo-pins', 'Loading repositories…');
  try {
    const repos = await listAll('/api/admin/github/repos');
    if (repos.length === 0) note('repo-pins', 'No repositories are registered yet.');
    else checkboxList('repo-pins', 'repos', repos.map((r) => ({ value: r.fullName, label: r.fullName })));
  } catch (err) {
    if (err instanceof SessionExpired) return;
    // Fall back to typing names if the admin list is unavailable.
    $('repo-pins').replaceChildren();
    $('repo-text-field').hidden = false;
  }
}

function onShowCreate() {
  clearMessages();
  clearSecretsFromPage();
  $('usage-panel').hidden = true;
  $('create-form').reset();
  $('create-error').textContent = '';
  updateWriteWarning();
  $('create-panel').hidden = false;
  $('create-title').focus();
  void loadPins();
}

function onCancelCreate() {
  $('create-panel').hidden = true;
  $('show-create').focus();
}

function updateWriteWarning() {
  const writes = [...document.querySelectorAll('#scope-groups input:checked')].filter((i) => i.value.endsWith(':write'));
  const warning = $('write-warning');
  warning.hidden = writes.length === 0;
  warning.textContent = writes.length
    ? `This key will be able to change data (${writes.map((i) => i.value).join(', ')}). Uncheck write scopes the client does not need.`
    : '';
}

/** Tool names typed into a field (commas or spaces between them). */
function toolNames(text) {
  return [...new Set(text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean))];
}

/** How a key or connected app's narrowing within its scopes reads: "Read-only; only tools: a, b", or ''. */
function restrictionText(credential) {
  const parts = [];
  if (credential.readOnly) parts.push('Read-only');
  if (credential.tools && credential.tools.length) parts.push(`only tools: ${credential.tools.join(', ')}`);
  const text = parts.join('; ');
  return text && text[0].toUpperCase() + text.slice(1);
}

function checkedValues(selector) {
  return [...document.querySelectorAll(selector)].filter((i) => i.checked).map((i) => i.value);
}

/** What the create form lacks before it can be sent, or ''. */
function createProblem() {
  if (!$('key-name').value.trim()) return 'Give the key a name.';
  if (checkedValues('#scope-groups input[name="scopes"]').length === 0) return 'Check at least one scope.';
  return '';
}

async function onCreate(event) {
  event.preventDefault();
  const errorEl = $('create-error');
  errorEl.textContent = '';
  const name = $('key-name').value.trim();
  const scopes = checkedValues('#scope-groups input[name="scopes"]');
  const problem = createProblem();
  if (problem) {
    errorEl.textContent = problem;
    (name ? document.querySelector('#scope-groups input') : $('key-name'))?.focus();
    return;
  }
  const body = { name, scopes, expiresIn: $('key-expiry').value };
  if ($('key-confirm-writes').checked) body.confirmWrites = true;
  if ($('key-read-only').checked) body.readOnly = true;
  const tools = toolNames($('key-tools').value);
  if (tools.length) body.tools = tools;
  const projectIds = checkedValues('#project-pins input[name="projectIds"]');
  if (projectIds.length) body.projectIds = projectIds;
  const repos = $('repo-text-field').hidden
    ? checkedValues('#repo-pins input[name="repos"]')
    : $('repo-text').value.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
  if (repos.length) body.repos = repos;
  const allowedIps = $('key-allowed-ips').value.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
  if (allowedIps.length) body.allowedIps = allowedIps;

  await submitting($('create-submit'), errorEl, async () => {
    const created = await api('POST', '/api/api-keys', body);
    $('create-panel').hidden = true;
    showCreatedKey(created);
    await loadKeys();
    announce(`Key "${created.name}" created. Copy it now: it will not be shown again.`);
  });
}

/** Runs a form's request with its submit button disabled; a refusal is shown in the form's error element. */
async function submitting(submit, errorEl, action) {
  submit.disabled = true;
  try {
    await action();
  } catch (err) {
    if (!(err instanceof SessionExpired)) {
      errorEl.textContent = describeError(err);
      submit.focus();
    }
  } finally {
    submit.disabled = false;
  }
}

function showCreatedKey(created) {
  const origin = window.location.origin;
  const mcpUrl = `${origin}/api/v1/public/mcp`;
  $('created-key').value = created.key;
  showMcpSnippets(mcpClientSnippets(mcpUrl));
  $('connector-url').textContent = mcpUrl;
  const lines = [
    '# The tools this key may call',
    `curl -s -H "Authorization: Bearer ${created.key}" \\`,
    `  ${mcpUrl}/tools`,
  ];
  const example = (scopeCatalog ?? []).find((s) => s.exampleTool && created.scopes.includes(s.name))?.exampleTool;
  if (example) {
    lines.push(
      '',
      '# Call a tool',
      `curl -s -X POST -H "Authorization: Bearer ${created.key}" \\`,
      '  -H "Content-Type: application/json" \\',
      `  -d '{"name": "${example}", "arguments": {}}' \\`,
      `  ${mcpUrl}/call`,
    );
  }
  $('created-curl').textContent = lines.join('\n');
  $('created-panel').hidden = false;
  $('created-title').focus();
}

/** One client's snippet at a time; the choice is remembered only for this page view. */
function showMcpSnippets(snippets) {
  const select = $('mcp-client');
  const chosen = select.value || snippets[0].id;
  select.replaceChildren(...snippets.map((s) => new Option(s.label, s.id, false, s.id === chosen)));
  const render = () => {
    const snippet = snippets.find((s) => s.id === select.value) ?? snippets[0];
    $('created-mcp').textContent = snippet.text;
    $('mcp-where').textContent = snippet.where;
    $('mcp-env').hidden = !snippet.usesEnv;
    $('mcp-env-command').textContent = SET_KEY_VARIABLE;
  };
  select.onchange = render;
  render();
}

/** Drops the one-time plaintext from the DOM. */
function clearSecretsFromPage() {
  $('created-key').value = '';
  $('created-mcp').textContent = '';
  $('mcp-client').replaceChildren();
  $('mcp-env').hidden = true;
  $('created-curl').textContent = '';
  $('created-panel').hidden = true;
}

function onCreatedDone() {
  clearSecretsFromPage();
  $('show-create').focus();
  announce('The key is no longer shown on this page.');
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Fall through to the selection-based copy (e.g. clipboard permission denied).
    }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'visually-hidden';
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

async function onCopy(button) {
  const source = $(button.dataset.copyFrom);
  const text = 'value' in source && source.tagName === 'INPUT' ? source.value : source.textContent;
  const ok = await copyText(text);
  if (ok) announce('Copied to the clipboard.');
  else {
    if (source.tagName === 'INPUT') source.select();
    showError('Copying failed; select the text and copy it by hand.');
  }
}

// ---- usage -----------------------------------------------------------------------------------------

async function onShowUsage(keyId, trigger) {
  const detail = await guarded(() => api('GET', `/api/api-keys/${encodeURIComponent(keyId)}`));
  if (!detail) return;
  $('create-panel').hidden = true;
  renderUsage(keyId, detail);
  $('usage-title').focus();
}

function renderUsage(keyId, detail) {
  $('usage-title').textContent = `Recent calls of "${detail.name}"`;
  const body = $('usage-body');
  body.replaceChildren();
  for (const call of detail.recentUsage || []) {
    const tr = document.createElement('tr');
    cell(tr, timeEl(call.at, ''), 'usage-at');
    cell(tr, call.tool || '—', 'usage-tool');
    const status = cell(tr, String(call.status), 'usage-status');
    status.classList.add(call.status < 400 ? 'ok' : 'failed');
    cell(tr, `${call.durationMs} ms`, 'usage-duration');
    body.append(tr);
  }
  const empty = !detail.recentUsage || detail.recentUsage.length === 0;
  $('usage-empty').hidden = !empty;
  $('usage-table').hidden = empty;
  $('usage-panel').hidden = false;
  $('usage-panel').dataset.keyId = keyId;
}

function onCloseUsage() {
  const panel = $('usage-panel');
  panel.hidden = true;
  const keyId = panel.dataset.keyId;
  const back = keyId && document.querySelector(`button[data-action="usage"][data-key-id="${CSS.escape(keyId)}"]`);
  (back || $('keys-title')).focus();
}

// ---- delete ----------------------------------------------------------------------------------------

function onAskDelete(keyId, trigger) {
  const key = keysById.get(keyId);
  if (!key) return;
  const dialog = $('confirm-dialog');
  $('confirm-text').textContent =
    `"${key.name}" (atr_${key.prefix}…) will stop working at once for every client that uses it. This cannot be undone.`;
  dialog.returnValue = '';
  dialog.onclose = async () => {
    dialog.onclose = null;
    if (dialog.returnValue !== 'delete') {
      if (trigger.isConnected) trigger.focus();
      return;
    }
    const done = await guarded(() => api('DELETE', `/api/api-keys/${encodeURIComponent(keyId)}`));
    if (!done) {
      if (trigger.isConnected) trigger.focus();
      return;
    }
    if ($('usage-panel').dataset.keyId === keyId) $('usage-panel').hidden = true;
    await loadKeys();
    $('keys-title').focus();
    announce(`Key "${key.name}" deleted; it no longer works.`);
  };
  dialog.showModal();
  $('confirm-cancel').focus();
}

/** Rolling: a new key with the same settings, shown once like a created one; the old one works for the chosen overlap. */
function onAskRoll(keyId, trigger) {
  const key = keysById.get(keyId);
  if (!key) return;
  const dialog = $('roll-dialog');
  $('roll-text').textContent =
    `A new key replaces "${key.name}" (atr_${key.prefix}…) with the same scopes and limits. Put it into your clients before the old one stops working.`;
  dialog.returnValue = '';
  dialog.onclose = async () => {
    dialog.onclose = null;
    if (dialog.returnValue !== 'roll') {
      if (trigger.isConnected) trigger.focus();
      return;
    }
    const created = await guarded(() =>
      api('POST', `/api/api-keys/${encodeURIComponent(keyId)}/roll`, { overlap: $('roll-overlap').value }),
    );
    if (!created) {
      if (trigger.isConnected) trigger.focus();
      return;
    }
    $('create-panel').hidden = true;
    showCreatedKey(created);
    await loadKeys();
    announce(`Key "${key.name}" rolled. Copy the new key now: it will not be shown again.`);
  };
  dialog.showModal();
  $('roll-cancel').focus();
}

// ---- connected apps (OAuth grants) -----------------------------------------------------------------

function renderConnectedApps(apps) {
  const body = $('apps-body');
  body.replaceChildren();
  for (const app of apps) {
    const tr = document.createElement('tr');
    tr.dataset.grantId = app.id;
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = app.clientName;
    tr.append(th);
    const pins = [];
    if (app.projectIds && app.projectIds.length) pins.push(`${app.projectIds.length} project${app.projectIds.length === 1 ? '' : 's'}`);
    if (app.repos && app.repos.length) pins.push(app.repos.join(', '));
    const narrowing = restrictionText(app);
    cell(tr, app.scopes.join(', ') + (pins.length ? ` (limited to ${pins.join('; ')})` : '') + (app.confirmWrites ? '; writes need your confirmation' : '') + (narrowing ? `; ${narrowing.toLowerCase()}` : '') + (app.allowedIps && app.allowedIps.length ? `; only from ${app.allowedIps.join(', ')}` : ''));
    cell(tr, timeEl(app.createdAt, ''));
    cell(tr, timeEl(app.expiresAt, 'Never'));
    cell(tr, timeEl(app.lastUsedAt, 'Never'));
    cell(tr, String(app.callCount));
    const revoke = document.createElement('button');
    revoke.type = 'button';
    revoke.className = 'danger small';
    revoke.dataset.grantId = app.id;
    revoke.textContent = 'Disconnect';
    revoke.setAttribute('aria-label', `Disconnect ${app.clientName}`);
    cell(tr, revoke);
    body.append(tr);
  }
  $('apps-empty').hidden = apps.length > 0;
  $('apps-table').hidden = apps.length === 0;
}

async function loadConnectedApps() {
  const apps = await guarded(() => listAll('/api/oauth/grants'));
  if (apps) renderConnectedApps(apps);
}

async function onDisconnect(button) {
  const name = button.closest('tr').querySelector('th').textContent;
  if (!window.confirm(`Disconnect "${name}"? It stops working at once and must be connected again to be used.`)) return;
  const done = await guarded(() => api('DELETE', `/api/oauth/grants/${encodeURIComponent(button.dataset.grantId)}`));
  if (!done) return;
  await loadConnectedApps();
  $('apps-title').focus();
  announce(`"${name}" disconnected.`);
}

// ---- admin policy (admins only) --------------------------------------------------------------------

/**
 * The policy's nullable fields: each has a "limit" checkbox (`<input id>-on`); unchecked sends null (the rule is
 * lifted), checked sends what the field holds. `split` turns the text into a list; OAuth client names may hold spaces.
 */
const POLICY_LISTS = [
  { field: 'allowedKeyScopes', input: 'policy-scopes', split: /[\s,]+/, join: ', ' },
  { field: 'allowedIps', input: 'policy-ips', split: /[\s,]+/, join: ', ' },
  { field: 'allowedOAuthClients', input: 'policy-clients', split: /\n/, join: '\n' },
];

function isAdmin() {
  return Boolean(session && session.user.role === 'admin');
}

function setLimit(inputId, value) {
  const on = value !== null;
  $(`${inputId}-on`).checked = on;
  $(inputId).disabled = !on;
  $(inputId).value = on ? value : '';
}

function renderPolicy(policy) {
  setLimit('policy-max-lifetime', policy.maxKeyLifetimeDays === null ? null : String(policy.maxKeyLifetimeDays));
  for (const list of POLICY_LISTS) setLimit(list.input, policy[list.field] === null ? null : policy[list.field].join(list.join));
  $('policy-confirm-writes').checked = policy.requireConfirmWritesForWriteScopes;
  $('policy-max-credentials').value = String(policy.maxCredentialsPerUser);
  $('policy-updated').textContent = policy.updatedAt
    ? `Last saved ${formatDate(policy.updatedAt)}.`
    : 'No policy has been saved yet: these are the defaults.';
}

function hidePolicy() {
  $('policy-section').hidden = true;
  $('nav-policy-item').hidden = true;
  $('policy-form').reset();
  $('policy-error').textContent = '';
  $('policy-updated').textContent = '';
}

/** Members never see the section, and never ask for the policy (the API would refuse them anyway). */
async function loadPolicy() {
  if (!isAdmin()) return hidePolicy();
  const policy = await guarded(() => api('GET', '/api/admin/policy'), $('policy-error'));
  if (!policy) return;
  renderPolicy(policy);
  $('policy-section').hidden = false;
  $('nav-policy-item').hidden = false;
}

/** A number field's value as the API takes it; what is not a number is sent as typed, for the server to name. */
function policyNumber(inputId) {
  const text = $(inputId).value.trim();
  return /^\d+$/.test(text) ? Number(text) : text;
}

async function onSavePolicy(event) {
  event.preventDefault();
  const errorEl = $('policy-error');
  errorEl.textContent = '';
  const body = {
    maxKeyLifetimeDays: $('policy-max-lifetime-on').checked ? policyNumber('policy-max-lifetime') : null,
    requireConfirmWritesForWriteScopes: $('policy-confirm-writes').checked,
    maxCredentialsPerUser: policyNumber('policy-max-credentials'),
  };
  for (const list of POLICY_LISTS)
    body[list.field] = $(`${list.input}-on`).checked
      ? [...new Set($(list.input).value.split(list.split).map((s) => s.trim()).filter(Boolean))]
      : null;
  await submitting($('policy-save'), errorEl, async () => {
    renderPolicy(await api('PUT', '/api/admin/policy', body));
    announce('Admin policy saved.');
  });
}

function onToggleLimit(event) {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.dataset.limits) return;
  const input = $(box.dataset.limits);
  input.disabled = !box.checked;
  if (box.checked) input.focus();
}

// ---- fresh usage -----------------------------------------------------------------------------------

/** While the page is in view, the lists are re-read this often, so "Last used" and "Calls" follow the clients' calls. */
const REFRESH_EVERY_MS = 30_000;
let backgroundRefresh = null;

/**
 * Re-reads the keys, the connected apps and an open "Recent calls" panel without messages or focus moves:
 * when the user comes back to the tab or the window (after trying a key in a client) and on a timer.
 */
function refreshInBackground() {
  // Not behind the delete dialog: a re-render would replace the button that focus returns to.
  if (!session || document.visibilityState !== 'visible' || backgroundRefresh || $('confirm-dialog').open || $('roll-dialog').open) return;
  const owner = session;
  const usageKeyId = $('usage-panel').hidden ? null : $('usage-panel').dataset.keyId;
  backgroundRefresh = (async () => {
    try {
      const [keys, apps, usage] = await Promise.all([
        fetchAllKeys(),
        listAll('/api/oauth/grants'),
        usageKeyId ? api('GET', `/api/api-keys/${encodeURIComponent(usageKeyId)}`) : null,
      ]);
      if (session !== owner) return; // signed out (or in as someone else) meanwhile
      renderKeys(keys);
      renderConnectedApps(apps);
      if (usage && !$('usage-panel').hidden && $('usage-panel').dataset.keyId === usageKeyId) renderUsage(usageKeyId, usage);
    } catch {
      // Nothing changes on a failed background read; a refused token has already ended the session (api()).
    } finally {
      backgroundRefresh = null;
    }
  })();
}

// ---- wiring ----------------------------------------------------------------------------------------

function init() {
  $('login-form').addEventListener('submit', onLogin);
  $('signup-form').addEventListener('submit', onSignup);
  $('toggle-revoked').addEventListener('click', onToggleRevoked);
  clearErrorWhenFixed('login-form', 'login-error', () => (!$('login-email').value.trim() || !$('login-password').value ? LOGIN_INCOMPLETE : ''));
  clearErrorWhenFixed('signup-form', 'signup-error', () => signupProblem()?.text ?? '');
  clearErrorWhenFixed('create-form', 'create-error', createProblem);
  $('logout').addEventListener('click', onLogout);
  $('nav-keys').addEventListener('click', () => {
    $('keys-title').focus();
    void loadKeys();
  });
  $('nav-policy').addEventListener('click', () => {
    $('policy-title').focus();
    void loadPolicy();
  });
  $('policy-form').addEventListener('submit', onSavePolicy);
  $('policy-form').addEventListener('change', onToggleLimit);
  $('policy-form').addEventListener('input', () => ($('policy-error').textContent = ''));
  $('refresh-keys').addEventListener('click', onRefresh);
  $('show-create').addEventListener('click', onShowCreate);
  $('create-cancel').addEventListener('click', onCancelCreate);
  $('create-form').addEventListener('submit', onCreate);
  $('scope-groups').addEventListener('change', updateWriteWarning);
  $('created-done').addEventListener('click', onCreatedDone);
  $('usage-close').addEventListener('click', onCloseUsage);
  $('apps-body').addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-grant-id]') : null;
    if (button) void onDisconnect(button);
  });
  $('keys-body').addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-action]') : null;
    if (!button) return;
    if (button.dataset.action === 'usage') void onShowUsage(button.dataset.keyId, button);
    if (button.dataset.action === 'delete') onAskDelete(button.dataset.keyId, button);
    if (button.dataset.action === 'roll') onAskRoll(button.dataset.keyId, button);
  });
  for (const button of document.querySelectorAll('button[data-copy-from]')) {
    button.addEventListener('click', () => void onCopy(button));
  }
  // Escape closes the open side panel (the dialog handles its own Escape).
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || $('confirm-dialog').open || $('roll-dialog').open) return;
    if (!$('usage-panel').hidden) onCloseUsage();
    else if (!$('create-panel').hidden) onCancelCreate();
  });
  document.addEventListener('visibilitychange', refreshInBackground);
  window.addEventListener('focus', refreshInBackground);
  window.setInterval(refreshInBackground, REFRESH_EVERY_MS);
  showLogin('');
  void showSignupIfOpen();
}

init();
