import { randomUUID } from 'node:crypto';
import {
  call,
  drillSeed,
  envInt,
  excerpt,
  internalsIn,
  Prng,
  type RawRequest,
  type RawResponse,
} from './support/drill-helpers';
import { makeUser, type TestUser } from './support/factories';
import { startTestApp, type TestApp } from './support/test-app';

/**
 * Input fuzzing drill (OWASP API8 security misconfiguration / API4 resource consumption): malformed and
 * random bodies, wrong types, NUL bytes, lone surrogates, huge strings, deep JSON, wrong content types,
 * broken multipart and malformed UUIDs, on every Area A tool and every Area B route. Every answer must be
 * a 2xx or a documented 4xx with its documented code (API.md), in the right body shape for its area, and
 * never a 5xx, a stack trace or SQL text. Replay with DRILL_SEED; DRILL_FUZZ_CASES sizes the random part.
 */

const AREA_A_CODES: Record<number, string[]> = {
  400: ['invalid_request', 'invalid_argument', 'missing_argument'],
  401: ['missing_api_key', 'invalid_api_key'],
  403: ['insufficient_scope', 'tool_not_allowed', 'forbidden'],
  404: ['unknown_tool', 'not_found'],
  409: ['idempotency_conflict', 'conflict'],
  413: ['invalid_request'],
  415: ['invalid_request'],
};
const AREA_B_CODES: Record<number, string[]> = {
  400: ['VALIDATION_FAILED'],
  401: ['AUTH_REQUIRED', 'AUTH_INVALID'],
  403: ['FORBIDDEN'],
  404: ['NOT_FOUND'],
  405: ['VALIDATION_FAILED'],
  409: ['CONFLICT', 'STATE_CONFLICT'],
  413: ['PAYLOAD_TOO_LARGE'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
};

/** Parameters of each tool, with their type, as the catalog in API.md names them. */
const TOOLS: Record<string, Record<string, 'str' | 'uuid' | 'int' | 'bool' | 'date' | 'list' | 'repo'>> = {
  list_tasks: {
    status: 'str',
    assignee_id: 'uuid',
    project_id: 'uuid',
    priority: 'str',
    due_before: 'date',
    limit: 'int',
  },
  get_task: { task_id: 'uuid' },
  search_tasks: { query: 'str', status: 'str', limit: 'int' },
  task_stats: { project_id: 'uuid' },
  create_task: {
    title: 'str',
    description: 'str',
    priority: 'str',
    status: 'str',
    due_date: 'date',
    assignee_id: 'uuid',
    project_id: 'uuid',
  },
  update_task: {
    task_id: 'uuid',
    title: 'str',
    description: 'str',
    status: 'str',
    priority: 'str',
    due_date: 'date',
    assignee_id: 'uuid',
  },
  delete_task: { task_id: 'uuid' },
  list_documents: { project_id: 'uuid', query: 'str', limit: 'int' },
  get_document: { document_id: 'uuid', include_content: 'bool' },
  search_documents: { query: 'str', project_id: 'uuid', limit: 'int' },
  create_document: { title: 'str', content: 'str', project_id: 'uuid', is_public: 'bool' },
  update_document: { document_id: 'uuid', title: 'str', content: 'str', is_public: 'bool' },
  delete_document: { document_id: 'uuid' },
  list_repositories: {},
  list_commits: { repo: 'repo', branch: 'str', since: 'date', limit: 'int' },
  list_issues: { repo: 'repo', state: 'str', labels: 'str', limit: 'int' },
  list_pull_requests: { repo: 'repo', state: 'str', limit: 'int' },
  list_workflow_runs: { repo: 'repo', branch: 'str', status: 'str', limit: 'int' },
  create_issue: { repo: 'repo', title: 'str', body: 'str', labels: 'list' },
  create_issue_comment: { repo: 'repo', issue_number: 'int', body: 'str' },
};

const seed = drillSeed();
const randomCases = envInt('DRILL_FUZZ_CASES', 1500);

describe(`input fuzzing drill (seed ${seed})`, () => {
  let t: TestApp;
  let user: TestUser;
  let key: string;
  let projectToken: string;
  let projectId: string;
  let taskId: string;
  let documentId: string;
  let keyId: string;
  const rng = new Prng(seed);

  beforeAll(async () => {
    // eslint-disable-next-line no-console
    console.log(`drill-fuzz: DRILL_SEED=${seed} (${randomCases} random cases)`);
    t = await startTestApp({
      env: {
        RATE_LIMIT_KEY_PER_MIN: '1000000',
        RATE_LIMIT_USER_PER_MIN: '1000000',
        RATE_LIMIT_LOGIN_PER_15_MIN: '100000',
      },
    });
    user = await makeUser(t);
    const b = (method: string, path: string, body?: unknown) =>
      call(t.baseUrl, { method, path, token: user.token, body });
    projectId = (await b('POST', '/api/projects', { name: 'fuzz' })).json.data.id;
    projectToken = (await b('POST', `/api/projects/${projectId}/session-tokens`, { name: 'fuzz', role: 'editor' })).json
      .data.token;
    const created = await b('POST', '/api/api-keys', {
      name: 'fuzz',
      scopes: ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'],
      expiresIn: 'never',
    });
    key = created.json.data.key;
    keyId = created.json.data.id;
    const tool = (name: string, args: unknown) =>
      call(t.baseUrl, { method: 'POST', path: '/api/v1/public/mcp/call', token: key, body: { name, arguments: args } });
    taskId = (await tool('create_task', { title: 'fuzz task', project_id: projectId })).json.result.id;
    documentId = (await tool('create_document', { title: 'fuzz doc', content: 'fuzz content', project_id: projectId }))
      .json.result.id;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  // ---- generators --------------------------------------------------------------------------------
  const nasty = (): unknown => {
    const choices: (() => unknown)[] = [
      () => '',
      () => ' ',
      () => 'a\u0000b',
      () => '\u0000',
      () => '\ud800',
      () => 'x\udfffy',
      () => '\ud83d\ude00 emoji ✓ ﷽ ‮rtl',
      () => 'x'.repeat(rng.pick([201, 301, 2001, 20_001, 300_000])),
      () => "'; DROP TABLE tasks; --",
      () => '%00%27%22',
      () => '../../etc/passwd',
      () => '00000000-0000-0000-0000-000000000000',
      () => '------------------------------------',
      () => 'ffffffff-ffff-ffff-ffff-fffffffffffffff',
      () => randomUUID().toUpperCase(),
      () => `${randomUUID()}\u0000`,
      () => `{${randomUUID()}}`,
      () => 'not-a-uuid',
      () => '2026-02-30',
      () => '2026-13-01',
      () => '9999999-01-01',
      () => '2026-1-1',
      () => 'owner/name/extra',
      () => 'a/b',
      () => -1,
      () => 0,
      () => 1.5,
      () => 1e308,
      () => -0,
      () => 2 ** 53 + 1,
      () => '12abc',
      () => ' 7 ',
      () => '99999999999999999999999',
      () => true,
      () => null,
      () => [],
      () => ['a', 1, null],
      () => Array.from({ length: 500 }, (_, i) => `l${i}`),
      () => ({}),
      () => ({ $ne: null }),
      () => ({ toString: 'x', __proto__: { polluted: true } }),
    ];
    return rng.pick(choices)();
  };
  const plausible = (type: string): unknown => {
    switch (type) {
      case 'uuid':
        return rng.pick([taskId, documentId, projectId, randomUUID(), user.id]);
      case 'int':
        return rng.int(1, 20);
      case 'bool':
        return rng.chance(0.5);
      case 'date':
        return '2026-12-01';
      case 'list':
        return ['bug'];
      case 'repo':
        return 'octo/hello';
      default:
        return `fuzz ${rng.hex(6)}`;
    }
  };
  const fuzzArgs = (tool: string): Record<string, unknown> => {
    const args: Record<string, unknown> = {};
    for (const [name, type] of Object.entries(TOOLS[tool])) {
      if (rng.chance(0.25)) continue;
      // Deletes never get a real id: the seeded objects must survive for the last check.
      args[name] = rng.chance(0.5)
        ? nasty()
        : tool.startsWith('delete_') && type === 'uuid'
          ? randomUUID()
          : plausible(type);
    }
    if (rng.chance(0.15)) args[rng.pick(['unknown', '__proto__', 'constructor', 'ΩΩ', ''])] = nasty();
    return args;
  };

  const nested = (depth: number, open: string, close: string, inner = '1') =>
    open.repeat(depth) + inner + close.repeat(depth);
  const rawBodies = (): { rawBody: string | Buffer; contentType?: string; what: string }[] => [
    { rawBody: '', contentType: 'application/json', what: 'empty json' },
    { rawBody: '{', contentType: 'application/json', what: 'truncated json' },
    { rawBody: '{"name": "x",}', contentType: 'application/json', what: 'trailing comma' },
    { rawBody: 'null', contentType: 'application/json', what: 'null' },
    { rawBody: '[]', contentType: 'application/json', what: 'array' },
    { rawBody: '"str"', contentType: 'application/json', what: 'string' },
    { rawBody: '42', contentType: 'application/json', what: 'number' },
    { rawBody: '{"a":"\u0000"}', contentType: 'application/json', what: 'raw NUL in json' },
    {
      rawBody: '{"name":"\\u0000","arguments":{"title":"\\ud800"}}',
      contentType: 'application/json',
      what: 'escaped NUL + lone surrogate',
    },
    {
      rawBody: Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x22, 0x00]),
      contentType: 'application/json',
      what: 'utf-16 bytes',
    },
    {
      rawBody: Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]),
      contentType: 'application/json',
      what: 'invalid utf-8',
    },
    { rawBody: nested(10_000, '[', ']'), contentType: 'application/json', what: 'deep array 10k' },
    { rawBody: nested(10_000, '{"a":', '}'), contentType: 'application/json', what: 'deep object 10k' },
    {
      rawBody: `{"name":"list_tasks","arguments":${nested(5000, '{"a":', '}')}}`,
      contentType: 'application/json',
      what: 'deep arguments 5k',
    },
    {
      rawBody: JSON.stringify({ name: 'create_task', arguments: { title: 'x'.repeat(2 * 1024 * 1024) } }),
      contentType: 'application/json',
      what: '2 MiB json',
    },
    { rawBody: '{"name":"list_tasks"}', contentType: 'text/plain', what: 'text/plain' },
    { rawBody: 'name=list_tasks', contentType: 'application/x-www-form-urlencoded', what: 'form urlencoded' },
    { rawBody: '<x/>', contentType: 'application/xml', what: 'xml' },
    { rawBody: '{"name":"list_tasks"}', contentType: 'application/json; charset=latin-9', what: 'unknown charset' },
    { rawBody: '{"name":"list_tasks"}', contentType: 'multipart/form-data; boundary=zz', what: 'json as multipart' },
    { rawBody: '{"name":"list_tasks"}', contentType: 'garbage', what: 'garbage content type' },
    { rawBody: '{"name":"list_tasks"}', what: 'no content type' },
    { rawBody: '{"name":"list_tasks","name":"get_task"}', contentType: 'application/json', what: 'duplicate keys' },
    {
      rawBody: '{"__proto__":{"admin":true},"name":"list_tasks"}',
      contentType: 'application/json',
      what: 'proto pollution',
    },
  ];

  const badIds = [
    'not-a-uuid',
    '------------------------------------',
    '00000000-0000-0000-0000-00000000000g',
    `${randomUUID()}x`,
    '%00',
    '..%2F..%2Fetc',
    'ｆｕｌｌｗｉｄｔｈ',
    encodeURIComponent('\ud83d\ude00'),
    '1 OR 1=1',
    "'",
  ];

  /** Area B routes: [method, path template, credential, body generator]. `:id` is replaced by a good or bad id. */
  const areaBRoutes = (): { method: string; path: string; token: string | undefined; json?: boolean }[] => [
    { method: 'POST', path: '/api/auth/register', token: undefined },
    { method: 'POST', path: '/api/auth/login', token: undefined },
    { method: 'GET', path: '/api/auth/me', token: user.token },
    { method: 'GET', path: '/api/projects', token: user.token },
    { method: 'POST', path: '/api/projects', token: user.token },
    { method: 'GET', path: '/api/projects/:id', token: user.token },
    { method: 'PATCH', path: '/api/projects/:id', token: user.token },
    { method: 'POST', path: '/api/projects/:id/members', token: user.token },
    { method: 'POST', path: '/api/projects/:id/session-tokens', token: user.token },
    { method: 'GET', path: '/api/documents', token: user.token },
    { method: 'GET', path: '/api/documents/:id', token: user.token },
    { method: 'GET', path: '/api/documents/:id', token: projectToken },
    { method: 'DELETE', path: '/api/documents/:id', token: user.token },
    { method: 'POST', path: '/api/documents/upload', token: user.token },
    { method: 'POST', path: '/api/api-keys', token: user.token },
    { method: 'GET', path: '/api/api-keys', token: user.token },
    { method: 'GET', path: '/api/api-keys/:id', token: user.token },
    { method: 'DELETE', path: '/api/api-keys/:id', token: user.token },
    { method: 'POST', path: '/api/api-keys/:id/roll', token: user.token },
    // The drill's user is the first account, an admin: the policy's validation is what is fuzzed.
    { method: 'GET', path: '/api/admin/policy', token: user.token },
    { method: 'PUT', path: '/api/admin/policy', token: user.token },
    { method: 'PUT', path: '/api/admin/policy', token: projectToken },
    { method: 'GET', path: '/api/admin/api-keys/out-of-policy', token: user.token },
    { method: 'POST', path: '/api/rag/search', token: user.token },
    { method: 'POST', path: '/api/rag/ingest', token: user.token },
    { method: 'GET', path: '/api/rag/ingest/:id', token: user.token },
    { method: 'POST', path: '/api/rag/reindex', token: user.token },
    { method: 'POST', path: '/api/agent/execute', token: user.token },
    { method: 'GET', path: '/api/agent/status/:id', token: user.token },
    { method: 'POST', path: '/api/agent/cancel/:id', token: user.token },
    { method: 'GET', path: '/api/agent/history', token: user.token },
    { method: 'POST', path: '/api/admin/github/repos', token: user.token },
    { method: 'DELETE', path: '/api/admin/github/repos/:id', token: user.token },
    { method: 'GET', path: '/api/audit', token: user.token },
    { method: 'GET', path: '/api/audit', token: projectToken },
    { method: 'GET', path: '/api/admin/audit', token: user.token },
    { method: 'GET', path: '/api/admin/audit/export', token: user.token },
  ];
  const bodyFields = [
    'email',
    'password',
    'name',
    'description',
    'userId',
    'role',
    'expiresInMinutes',
    'scopes',
    'expiresIn',
    'projectIds',
    'repos',
    'query',
    'projectId',
    'topK',
    'mode',
    'documentIds',
    'input',
    'tools',
    'readOnly',
    'maxSteps',
    'owner',
    'token',
    'overlap',
    'allowedIps',
    'maxKeyLifetimeDays',
    'allowedKeyScopes',
    'requireConfirmWritesForWriteScopes',
    'allowedOAuthClients',
    'maxCredentialsPerUser',
  ];
  const fuzzBody = (): Record<string, unknown> => {
    const body: Record<string, unknown> = {};
    for (const field of rng.subset(bodyFields, 0.3))
      body[field] = rng.chance(0.3) ? plausible(rng.pick(['uuid', 'int', 'str'])) : nasty();
    return body;
  };
  const queryJunk = () =>
    rng.pick([
      '',
      '?limit=0',
      '?limit=-1',
      '?limit=abc',
      '?limit=201',
      '?limit=1e3',
      '?cursor=%00',
      '?cursor=AAAA',
      '?cursor=eyJ4IjoxfQ',
      `?cursor=${Buffer.from(JSON.stringify({ createdAt: '2026-01-01T00:00:00.000Z', id: 'x' })).toString('base64url')}`,
      `?cursor=${Buffer.from(JSON.stringify({ createdAt: '+275760-09-13T00:00:00.000Z', id: randomUUID() })).toString('base64url')}`,
      `?projectId=${encodeURIComponent(String(rng.pick(badIds)))}`,
      '?projectId[]=a&projectId[]=b',
      '?status=nope',
      '?limit=10&limit=20',
      '?action=nope',
      '?action[]=tool.call',
      '?from=yesterday',
      '?to=+275760-09-13T00:00:00Z',
      '?from=2026-01-02&to=2026-01-01',
      '?userId=x',
      `?credentialId=${encodeURIComponent(String(rng.pick(badIds)))}`,
    ]);

  // ---- the check -----------------------------------------------------------------------------------
  const stats = { cases: 0, by: new Map<number, number>() };
  const problems: string[] = [];
  function verify(what: string, req: RawRequest, res: RawResponse): void {
    stats.cases += 1;
    stats.by.set(res.status, (stats.by.get(res.status) ?? 0) + 1);
    const areaA = req.path.startsWith('/api/v1/public/mcp');
    const sent = `${req.method} ${req.path} ${excerpt(typeof req.body === 'string' ? req.body : JSON.stringify(req.body ?? req.rawBody?.toString().slice(0, 120) ?? ''), 160)}`;
    const report = (problem: string) => {
      if (problems.length < 60)
        problems.push(`${problem} | ${what} | ${sent} → ${res.status} ${excerpt(res.text, 300)}`);
    };
    const leaked = internalsIn(res.text);
    if (leaked) report(`internals in body: "${leaked}"`);
    if (res.status >= 500) return report('5xx');
    if (res.status < 300) return;
    if (/^\/api\/v1\/public\/mcp(\/readonly|\/x\/[^/]+(\/readonly)?)?$/.test(req.path)) {
      // The MCP door answers JSON-RPC errors; when it names an Area A code, it must be a documented one.
      if (res.json?.jsonrpc !== '2.0' || typeof res.json?.error?.code !== 'number')
        return report('JSON-RPC error shape');
      const inner = res.json.error.data?.error?.code;
      if (inner !== undefined && !(AREA_A_CODES[res.status] ?? []).includes(inner))
        report(`MCP data.error.code ${inner} not documented for ${res.status}`);
      return;
    }
    const table = areaA ? AREA_A_CODES : AREA_B_CODES;
    const allowed = table[res.status];
    if (!allowed) return report(`undocumented status ${res.status}`);
    const code = res.json?.error?.code;
    if (!allowed.includes(code)) return report(`code ${code} not documented for ${res.status}`);
    if (areaA && (typeof res.json.error.message !== 'string' || !res.json.traceId)) report('Area A error shape');
    if (!areaA && (res.json.success !== false || res.json.data !== null || !res.json.traceId))
      report('Area B envelope shape');
  }
  async function send(what: string, req: RawRequest): Promise<void> {
    verify(what, req, await call(t.baseUrl, req));
  }

  it('Area A: raw bodies, content types and deep JSON on /call and the MCP endpoint', async () => {
    for (const body of rawBodies()) {
      await send(`call ${body.what}`, {
        method: 'POST',
        path: '/api/v1/public/mcp/call',
        token: key,
        rawBody: body.rawBody,
        contentType: body.contentType,
      });
      await send(`mcp ${body.what}`, {
        method: 'POST',
        path: '/api/v1/public/mcp',
        token: key,
        rawBody: body.rawBody,
        contentType: body.contentType,
        headers: { accept: 'application/json, text/event-stream' },
      });
    }
    for (const body of [
      {},
      { name: 7 },
      { name: '' },
      { name: 'x'.repeat(5000) },
      { name: 'list_tasks', arguments: [] },
      { name: 'list_tasks', arguments: 'x' },
      { name: 'list_tasks', extra: 1 },
      { name: 'no_such_tool' },
      { name: '__proto__' },
      { name: 'constructor' },
      { name: 'toString' },
    ]) {
      await send('call envelope', { method: 'POST', path: '/api/v1/public/mcp/call', token: key, body });
    }
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'])
      await send(`call ${method}`, { method, path: '/api/v1/public/mcp/call', token: key });
    await send('tools garbage query', { method: 'GET', path: '/api/v1/public/mcp/tools?x=%00&y[]=1', token: key });

    // MCP sessions: forged, malformed and oversize Mcp-Session-Id values are 404 (-32001) on POST and DELETE; on a
    // real session (an initialize declaring elicitation), JSON-RPC responses nobody asked for are 400, never 5xx.
    const mcpHeaders = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const forgedIds = [
      'A'.repeat(43),
      randomUUID(),
      'x',
      '%00',
      '.'.repeat(43),
      'a'.repeat(8000),
      "' OR 1=1 --",
      Buffer.from(randomUUID()).toString('base64url').slice(0, 43),
    ];
    for (const sessionId of forgedIds) {
      for (const body of [
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', id: 'atrium-confirm-x', result: { action: 'accept' } },
      ]) {
        const req: RawRequest = {
          method: 'POST',
          path: '/api/v1/public/mcp',
          token: key,
          headers: { ...mcpHeaders, 'mcp-session-id': sessionId },
          body,
        };
        const res = await call(t.baseUrl, req);
        verify(`mcp forged session ${excerpt(sessionId, 20)}`, req, res);
        if (res.status !== 404) problems.push(`forged session ${excerpt(sessionId, 20)} → ${res.status}`);
      }
      const del: RawRequest = {
        method: 'DELETE',
        path: '/api/v1/public/mcp',
        token: key,
        headers: { 'mcp-session-id': sessionId },
      };
      verify('mcp DELETE forged session', del, await call(t.baseUrl, del));
    }
    const init = await call(t.baseUrl, {
      method: 'POST',
      path: '/api/v1/public/mcp',
      token: key,
      headers: mcpHeaders,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { elicitation: {} },
          clientInfo: { name: 'fuzz', version: '0' },
        },
      },
    });
    const sessionId = init.headers.get('mcp-session-id');
    if (!sessionId) problems.push(`initialize with elicitation gave no session: ${init.status}`);
    for (let i = 0; i < 20 && sessionId; i++) {
      const body = rng.pick([
        { jsonrpc: '2.0', id: nasty(), result: nasty() },
        {
          jsonrpc: '2.0',
          id: `atrium-confirm-${i}`,
          result: { action: rng.pick(['accept', 'decline', 'cancel', nasty()]), content: nasty() },
        },
        { jsonrpc: '2.0', id: i, error: { code: nasty(), message: nasty() } },
        { jsonrpc: '2.0', id: 'atrium-confirm-'.padEnd(5000, 'x'), result: { action: 'accept' } },
      ]);
      const req: RawRequest = {
        method: 'POST',
        path: '/api/v1/public/mcp',
        token: key,
        headers: { ...mcpHeaders, 'mcp-session-id': sessionId },
        body,
      };
      const res = await call(t.baseUrl, req);
      verify('mcp unsolicited response', req, res);
      if (res.status !== 400) problems.push(`unsolicited response → ${res.status} ${excerpt(res.text, 200)}`);
    }
    expect(problems).toEqual([]);
  }, 120_000);

  it('Area A: every tool with wrong types, unicode, huge strings, malformed ids, unknown and missing arguments', async () => {
    const tools = Object.keys(TOOLS);
    // Deterministic part: every string-like parameter of every tool once with NUL, an unpaired surrogate
    // and an oversize value (NUL used to reach PostgreSQL and answer 500).
    for (const tool of tools) {
      for (const [name, type] of Object.entries(TOOLS[tool])) {
        if (type === 'int' || type === 'bool') continue;
        for (const value of ['a\u0000b', 'x\ud800', 'y'.repeat(1_100_000)]) {
          const args: Record<string, unknown> = {};
          for (const [other, otherType] of Object.entries(TOOLS[tool]))
            args[other] = tool.startsWith('delete_') && otherType === 'uuid' ? randomUUID() : plausible(otherType);
          args[name] = value;
          await send(`tool ${tool}.${name} nasty`, {
            method: 'POST',
            path: '/api/v1/public/mcp/call',
            token: key,
            body: { name: tool, arguments: args },
          });
        }
      }
    }
    // Each tool once with each nasty value in each parameter position is too many; a seeded sample of them.
    for (let i = 0; i < randomCases; i++) {
      const tool = rng.chance(0.03)
        ? rng.pick(['List_Tasks', 'list_tasks ', 'list tasks', 'get_task\u0000'])
        : rng.pick(tools);
      const args = TOOLS[tool] ? fuzzArgs(tool) : {};
      const body = rng.chance(0.05) ? { name: tool } : { name: tool, arguments: args };
      await send(`tool ${tool}`, { method: 'POST', path: '/api/v1/public/mcp/call', token: key, body });
    }
    // JSON-RPC tools/call with the same kind of arguments (tool failures come back in-band or as JSON-RPC errors).
    for (let i = 0; i < 60; i++) {
      const tool = rng.pick(tools);
      await send(`mcp tools/call ${tool}`, {
        method: 'POST',
        path: '/api/v1/public/mcp',
        token: key,
        headers: { accept: 'application/json, text/event-stream' },
        body: rng.chance(0.2)
          ? { jsonrpc: '2.0', id: nasty(), method: nasty(), params: nasty() }
          : { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: tool, arguments: fuzzArgs(tool) } },
      });
    }
    // JSON-RPC batches of every shape: always 400 / -32600 with nothing run (one POST is one message).
    const tasksBefore = (
      await call(t.baseUrl, {
        method: 'POST',
        path: '/api/v1/public/mcp/call',
        token: key,
        body: { name: 'task_stats', arguments: {} },
      })
    ).json.result.total;
    for (let i = 0; i < 30; i++) {
      const size = rng.pick([1, 2, 5, 100, 1000]);
      const batch = Array.from({ length: size }, (_, j) =>
        rng.chance(0.7)
          ? {
              jsonrpc: '2.0',
              id: j,
              method: 'tools/call',
              params: { name: 'create_task', arguments: { title: `batch ${j}` } },
            }
          : rng.chance(0.5)
            ? nasty()
            : { jsonrpc: '2.0', method: 'notifications/initialized' },
      );
      const req: RawRequest = {
        method: 'POST',
        path: '/api/v1/public/mcp',
        token: key,
        headers: { accept: 'application/json, text/event-stream' },
        body: batch,
      };
      const res = await call(t.baseUrl, req);
      verify(`mcp batch of ${size}`, req, res);
      // A batch over JSON_BODY_MAX_BYTES (huge junk members) is refused earlier, as 413: refused all the same.
      const refused = (res.status === 400 || res.status === 413) && res.json?.error?.code === -32600;
      if (!refused) problems.push(`mcp batch of ${size} → ${res.status} ${excerpt(res.text, 200)}`);
    }
    const tasksAfter = (
      await call(t.baseUrl, {
        method: 'POST',
        path: '/api/v1/public/mcp/call',
        token: key,
        body: { name: 'task_stats', arguments: {} },
      })
    ).json.result.total;
    if (tasksAfter !== tasksBefore) problems.push(`mcp batches created ${tasksAfter - tasksBefore} tasks`);
    // eslint-disable-next-line no-console
    console.log(
      `drill-fuzz seed=${seed}: cases so far ${stats.cases}, statuses ${JSON.stringify(Object.fromEntries([...stats.by].sort()))}`,
    );
    expect(problems).toEqual([]);
  }, 300_000);

  it('Area B: malformed ids, queries and bodies on every route; broken multipart', async () => {
    const routes = areaBRoutes();
    for (const route of routes) {
      const ids = route.path.includes(':id') ? [...badIds, randomUUID()] : [''];
      for (const id of ids) {
        const path = route.path.replace(':id', id);
        if (route.method === 'GET' || route.method === 'DELETE') {
          await send(`B ${route.method} ${route.path}`, {
            method: route.method,
            path: path + queryJunk(),
            token: route.token,
          });
        } else {
          await send(`B ${route.method} ${route.path}`, {
            method: route.method,
            path,
            token: route.token,
            body: fuzzBody(),
          });
        }
      }
      if (route.method !== 'GET' && route.method !== 'DELETE') {
        const good = route.path.replace(':id', projectId);
        for (const field of bodyFields) {
          await send(`B ${route.path} ${field} NUL`, {
            method: route.method,
            path: good,
            token: route.token,
            body: { [field]: 'a\u0000b' },
          });
        }
        for (const body of rawBodies())
          await send(`B ${route.path} ${body.what}`, {
            method: route.method,
            path: good,
            token: route.token,
            rawBody: body.rawBody,
            contentType: body.contentType,
          });
        for (let i = 0; i < 12; i++)
          await send(`B ${route.path} fuzz body`, {
            method: route.method,
            path: good,
            token: route.token,
            body: fuzzBody(),
          });
      }
    }
    // No fuzzed body saved an admin policy, and the drill's key was neither rolled nor cut off.
    const policy = await call(t.baseUrl, { method: 'GET', path: '/api/admin/policy', token: user.token });
    if (policy.json?.data?.updatedAt !== null)
      problems.push(`a fuzzed body saved a policy: ${excerpt(policy.text, 300)}`);
    const keyView = await call(t.baseUrl, { method: 'GET', path: `/api/api-keys/${keyId}`, token: user.token });
    if (keyView.json?.data?.rolledTo !== null)
      problems.push(`the drill's key was rolled: ${excerpt(keyView.text, 300)}`);
    // Broken and odd multipart uploads.
    const boundary = 'drillboundary';
    const part = (name: string, value: string, file?: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${file}"` : ''}\r\n${file ? 'Content-Type: text/plain\r\n' : ''}\r\n${value}\r\n`;
    const multipart: [string, string | Buffer, string][] = [
      [
        'no closing boundary',
        part('projectId', projectId) + part('file', 'hello', 'a.txt'),
        `multipart/form-data; boundary=${boundary}`,
      ],
      ['no boundary param', part('projectId', projectId), 'multipart/form-data'],
      ['wrong boundary', `${part('projectId', projectId)}--${boundary}--\r\n`, 'multipart/form-data; boundary=other'],
      ['no file', `${part('projectId', projectId)}--${boundary}--\r\n`, `multipart/form-data; boundary=${boundary}`],
      [
        'bad projectId',
        `${part('projectId', 'nope') + part('file', 'hello', 'a.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'NUL projectId',
        `${part('projectId', `${projectId}\u0000`) + part('file', 'hello', 'a.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'two files',
        `${part('projectId', projectId) + part('file', 'one', 'a.txt') + part('file', 'two', 'b.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'other field name',
        `${part('projectId', projectId) + part('upload', 'hello', 'a.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'exe',
        `${part('projectId', projectId) + part('file', 'MZ\u0000\u0000binary', 'a.exe')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'fake pdf',
        `${part('projectId', projectId) + part('file', '%PDF-1.7 not really', 'a.pdf')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'fake docx',
        `${part('projectId', projectId) + part('file', 'PK\u0003\u0004garbage', 'a.docx')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'NUL text',
        `${part('projectId', projectId) + part('file', 'a\u0000b\u0000c', 'nul.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'isPublic junk',
        `${part('projectId', projectId) + part('isPublic', 'maybe') + part('file', 'junk flag', 'c.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'title NUL',
        `${part('projectId', projectId) + part('title', 'a\u0000b') + part('file', `title nul ${rng.hex(6)}`, 'd.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'huge title',
        `${part('projectId', projectId) + part('title', 't'.repeat(5000)) + part('file', `huge title ${rng.hex(6)}`, 'e.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'filename traversal',
        `${part('projectId', projectId) + part('file', `traversal ${rng.hex(6)}`, '../../etc/passwd.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'empty file',
        `${part('projectId', projectId) + part('file', '', 'empty.txt')}--${boundary}--\r\n`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [
        'garbage',
        Buffer.from(Array.from({ length: 4096 }, () => rng.int(0, 255))),
        `multipart/form-data; boundary=${boundary}`,
      ],
    ];
    for (const [what, rawBody, contentType] of multipart) {
      await send(`upload ${what}`, {
        method: 'POST',
        path: '/api/documents/upload',
        token: user.token,
        rawBody,
        contentType,
      });
    }
    await send('upload too large', {
      method: 'POST',
      path: '/api/documents/upload',
      token: user.token,
      contentType: `multipart/form-data; boundary=${boundary}`,
      rawBody: `${part('projectId', projectId) + part('file', 'x'.repeat(t.config.limits.uploadMaxBytes + 10), 'big.txt')}--${boundary}--\r\n`,
    });
    // Headers: odd request ids and authorization values.
    for (const authorization of [
      'Bearer',
      'Bearer ',
      'Basic Zm9vOmJhcg==',
      `Bearer ${'a'.repeat(10_000)}`,
      'Bearer atr_\u00ff',
      'Bearer atp_xyz',
      'Bearer a.b.c',
      `Bearer ${user.token}x`,
    ]) {
      await send(`auth header ${authorization.slice(0, 20)}`, {
        method: 'GET',
        path: '/api/auth/me',
        headers: { authorization: Buffer.from(authorization, 'latin1').toString('latin1') },
      });
      await send(`auth header A ${authorization.slice(0, 20)}`, {
        method: 'GET',
        path: '/api/v1/public/mcp/tools',
        headers: { authorization },
      });
    }
    for (const requestId of ['x'.repeat(500), '<script>', '../..', '']) {
      await send('x-request-id', {
        method: 'GET',
        path: '/api/auth/me',
        token: user.token,
        headers: { 'x-request-id': requestId, traceparent: 'garbage' },
      });
    }
    // X-Forwarded-For is untrusted by default (TRUST_PROXY unset): junk in it is ignored, never a 500.
    const forwarded = [
      '203.0.113.9',
      '1.1.1.1, 2.2.2.2, 3.3.3.3',
      'unknown',
      '::1',
      '[::1]:80',
      'x'.repeat(8000),
      '999.999.999.999',
      ',,,',
      '127.0.0.1, <script>',
      Array.from({ length: 500 }, (_, i) => `10.0.${i % 250}.1`).join(','),
    ];
    for (const xff of forwarded) {
      await send(`xff login ${xff.slice(0, 20)}`, {
        method: 'POST',
        path: '/api/auth/login',
        headers: { 'x-forwarded-for': xff },
        body: { email: user.email, password: 'wrong-password' },
      });
      await send(`xff register ${xff.slice(0, 20)}`, {
        method: 'POST',
        path: '/api/auth/register',
        headers: { 'x-forwarded-for': xff },
        body: { email: nasty(), password: nasty(), name: nasty() },
      });
      await send(`xff area A ${xff.slice(0, 20)}`, {
        method: 'GET',
        path: '/api/v1/public/mcp/tools',
        token: key,
        headers: { 'x-forwarded-for': xff, 'x-forwarded-proto': 'gopher', 'x-forwarded-host': xff.slice(0, 100) },
      });
    }
    // eslint-disable-next-line no-console
    console.log(
      `drill-fuzz seed=${seed}: fuzz cases=${stats.cases}, problems=${problems.length}, statuses ${JSON.stringify(Object.fromEntries([...stats.by].sort()))}`,
    );
    expect(problems).toEqual([]);
  }, 300_000);

  it('OAuth endpoints: junk forms, JSON and queries answer RFC errors, never a 5xx or a redirect to an unregistered URI', async () => {
    const OAUTH_ERRORS = [
      'invalid_request',
      'invalid_client',
      'invalid_grant',
      'unsupported_grant_type',
      'invalid_scope',
      'invalid_target',
      'invalid_redirect_uri',
      'invalid_client_metadata',
      'too_many_requests',
    ];
    const registered = 'http://127.0.0.1:4999/cb';
    const client = await call(t.baseUrl, {
      method: 'POST',
      path: '/oauth/register',
      body: { redirect_uris: [registered], token_endpoint_auth_method: 'none' },
    });
    expect(client.status).toBe(201);
    const clientId = client.json.client_id as string;
    const junk = () => {
      const value = rng.chance(0.5) ? nasty() : plausible(rng.pick(['uuid', 'str', 'int']));
      return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
    };
    const oauthProblems: string[] = [];
    const check = (what: string, res: RawResponse, redirectAllowed = false) => {
      stats.cases += 1;
      stats.by.set(res.status, (stats.by.get(res.status) ?? 0) + 1);
      const leaked = internalsIn(res.text);
      if (leaked) oauthProblems.push(`${what}: internals "${leaked}"`);
      if (res.status >= 500) oauthProblems.push(`${what}: ${res.status} ${excerpt(res.text, 200)}`);
      const location = res.headers.get('location');
      if (location !== null && !(redirectAllowed && location.startsWith(`${registered}?`)))
        oauthProblems.push(`${what}: redirect to ${location}`);
      if (res.status >= 400 && res.json !== undefined && !OAUTH_ERRORS.includes(res.json.error))
        oauthProblems.push(`${what}: error ${JSON.stringify(res.json.error)}`);
    };
    const fields = [
      'grant_type',
      'code',
      'code_verifier',
      'redirect_uri',
      'client_id',
      'client_secret',
      'refresh_token',
      'resource',
      'scope',
      'token',
    ];
    for (let i = 0; i < Math.max(100, Math.floor(randomCases / 5)); i++) {
      const form = new URLSearchParams();
      for (const field of rng.subset(fields, 0.5))
        form.append(
          field,
          field === 'client_id' && rng.chance(0.5)
            ? clientId
            : field === 'grant_type' && rng.chance(0.6)
              ? rng.pick(['authorization_code', 'refresh_token'])
              : junk(),
        );
      if (rng.chance(0.1)) form.append('grant_type', 'authorization_code');
      const path = rng.pick(['/oauth/token', '/oauth/revoke']);
      const headers: Record<string, string> = rng.chance(0.2)
        ? { authorization: `Basic ${Buffer.from(`${junk()}:${junk()}`).toString('base64')}` }
        : {};
      check(
        `form ${path}`,
        await call(t.baseUrl, {
          method: 'POST',
          path,
          rawBody: form.toString(),
          contentType: rng.chance(0.9)
            ? 'application/x-www-form-urlencoded'
            : rng.pick(['application/json', 'text/plain']),
          headers,
        }),
      );
      check(
        'register',
        await call(t.baseUrl, {
          method: 'POST',
          path: '/oauth/register',
          body: rng.chance(0.5)
            ? { redirect_uris: [junk()], client_name: junk(), token_endpoint_auth_method: junk() }
            : rng.pick([null, [], 'x', { redirect_uris: 'x' }, { redirect_uris: [registered], grant_types: [junk()] }]),
        }),
      );
      const query = new URLSearchParams({
        client_id: rng.chance(0.7) ? clientId : junk(),
        redirect_uri: rng.chance(0.6) ? registered : junk(),
      });
      for (const field of rng.subset(
        ['response_type', 'code_challenge', 'code_challenge_method', 'scope', 'state', 'resource'],
        0.5,
      ))
        query.set(field, junk());
      const authorize = await fetch(`${t.baseUrl}/oauth/authorize?${query}`, { redirect: 'manual' });
      const text = await authorize.text();
      // A redirect may only go to the client's one registered URI (also chosen when redirect_uri is empty).
      check(
        'authorize',
        { status: authorize.status, headers: authorize.headers, text, json: undefined },
        query.get('client_id') === clientId,
      );
      const consent = await call(t.baseUrl, {
        method: 'POST',
        path: '/api/oauth/authorize',
        token: user.token,
        body: {
          clientId: rng.chance(0.6) ? clientId : nasty(),
          redirectUri: rng.chance(0.6) ? registered : nasty(),
          codeChallenge: nasty(),
          codeChallengeMethod: rng.pick(['S256', 'plain', nasty()]),
          approve: rng.pick([true, false, nasty()]),
          scopes: rng.pick([undefined, [nasty()], nasty()]),
          tools: rng.pick([undefined, [nasty()], nasty(), Array(1000).fill('list_tasks'), ['no_such_tool']]),
          readOnly: rng.pick([undefined, true, nasty()]),
        },
      });
      if (consent.status >= 500 || (consent.status >= 400 && consent.json?.error?.code !== 'VALIDATION_FAILED'))
        oauthProblems.push(`consent: ${consent.status} ${excerpt(consent.text, 200)}`);
    }
    for (const path of ['/api/oauth/grants/not-a-uuid', `/api/oauth/grants/${randomUUID()}`]) {
      const res = await call(t.baseUrl, { method: 'DELETE', path, token: user.token });
      if (res.status !== 404) oauthProblems.push(`DELETE ${path}: ${res.status}`);
    }
    // eslint-disable-next-line no-console
    console.log(`drill-fuzz seed=${seed}: oauth problems=${oauthProblems.length}`);
    expect(oauthProblems.slice(0, 40)).toEqual([]);
  }, 300_000);

  it('Narrowing: hostile tools/readOnly at key creation, junk toolset headers and URLs → 4xx, never 500 (the consent gets them in the OAuth case)', async () => {
    const before = problems.length;
    const hostileTools: unknown[] = [
      [],
      {},
      'list_tasks',
      [42],
      [null],
      [[]],
      [{ name: 'list_tasks' }],
      Array(10_000).fill('list_tasks'),
      Array.from({ length: 300 }, (_, i) => `tool_${i}`),
      ['x'.repeat(200_000)],
      ['__proto__', 'constructor', 'toString'],
      ['list_tasks', 'drop_database'],
      ['LIST_TASKS'],
      ['list_tasks\u0000'],
      ['💥'],
      nasty(),
    ];
    const hostileReadOnly: unknown[] = ['true', 1, 0, {}, [], 'yes', nasty()];
    for (const tools of hostileTools) {
      const res = await call(t.baseUrl, {
        method: 'POST',
        path: '/api/api-keys',
        token: user.token,
        body: { name: 'narrow fuzz', scopes: ['tasks:read'], expiresIn: 'never', tools },
      });
      verify(
        'key tools',
        { method: 'POST', path: '/api/api-keys', body: { tools: excerpt(JSON.stringify(tools), 80) } },
        res,
      );
      // null is the absent value of every optional field: a key with every tool of its scopes.
      const expected = tools === null ? 201 : 400;
      if (res.status !== expected) problems.push(`key tools ${excerpt(JSON.stringify(tools), 80)} → ${res.status}`);
      if (res.status === 201 && res.json?.data?.tools !== null)
        problems.push(`key tools null → tools ${res.json?.data?.tools}`);
    }
    for (const readOnly of hostileReadOnly) {
      const res = await call(t.baseUrl, {
        method: 'POST',
        path: '/api/api-keys',
        token: user.token,
        body: { name: 'narrow fuzz', scopes: ['tasks:read'], expiresIn: 'never', readOnly },
      });
      verify('key readOnly', { method: 'POST', path: '/api/api-keys', body: { readOnly } }, res);
      const expected = readOnly === null || typeof readOnly === 'boolean' ? 201 : 400;
      if (res.status !== expected)
        problems.push(`key readOnly ${excerpt(JSON.stringify(readOnly), 80)} → ${res.status}`);
      if (res.status === 201 && res.json?.data?.readOnly !== (readOnly === true)) {
        problems.push(`key readOnly ${JSON.stringify(readOnly)} → readOnly ${res.json?.data?.readOnly}`);
      }
    }
    const mcpList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const accept = { accept: 'application/json, text/event-stream' };
    const junkToolsets = [
      '',
      ' , ',
      'wiki',
      'tasks,'.repeat(500),
      '%00',
      '../tasks',
      'TASKS,💥',
      'a'.repeat(5000),
      nasty(),
    ];
    for (const value of junkToolsets) {
      for (const header of ['x-mcp-toolsets', 'x-mcp-readonly']) {
        for (const path of ['/api/v1/public/mcp', '/api/v1/public/mcp/tools']) {
          const req: RawRequest = {
            method: path.endsWith('tools') ? 'GET' : 'POST',
            path,
            token: key,
            headers: {
              ...accept,
              [header]: String(value)
                .replace(/[^\x20-\x7e]/g, '')
                .slice(0, 6000),
            },
            ...(path.endsWith('tools') ? {} : { body: mcpList }),
          };
          await send(`narrowing header ${header}`, req);
        }
      }
    }
    for (const segment of [
      'wiki',
      '%2e%2e',
      '%00',
      'TASKS',
      'tasks%2Fdocs',
      '💥',
      'a'.repeat(3000),
      "'; DROP TABLE x;--",
    ]) {
      for (const suffix of ['', '/readonly']) {
        await send('narrowing URL', {
          method: 'POST',
          path: `/api/v1/public/mcp/x/${encodeURIComponent(decodeURIComponentSafe(segment))}${suffix}`,
          token: key,
          headers: accept,
          body: mcpList,
        });
      }
    }
    // eslint-disable-next-line no-console
    console.log(`drill-fuzz seed=${seed}: narrowing problems=${problems.length - before}`);
    expect(problems.slice(before, before + 40)).toEqual([]);
  }, 300_000);

  it('the service is still healthy and the seeded objects are intact after the fuzzing', async () => {
    const health = await call(t.baseUrl, { method: 'GET', path: '/api/health' });
    expect(health.status).toBe(200);
    const got = await call(t.baseUrl, {
      method: 'POST',
      path: '/api/v1/public/mcp/call',
      token: key,
      body: { name: 'get_task', arguments: { task_id: taskId } },
    });
    expect(got.status).toBe(200);
    const keyView = await call(t.baseUrl, { method: 'GET', path: `/api/api-keys/${keyId}`, token: user.token });
    expect(keyView.json.data.status).toBe('active');
  });
});

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
