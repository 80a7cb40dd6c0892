import type { AppConfig } from '../../config/app-config.js';
import { toMcpClientInfo } from './mcp-client-info.js';
import type { McpSessionsRepository } from './mcp-sessions.repository.js';
import { McpSessions } from './mcp-sessions.service.js';

describe('McpSessions.openingFor (which initialize opens a session)', () => {
  const sessions = new McpSessions({} as McpSessionsRepository, { mcp: { sessionTtlMs: 60_000 } } as AppConfig);
  const init = (protocolVersion: unknown, capabilities: unknown, clientInfo: unknown = { name: 'c', version: '1' }) => ({ protocolVersion, capabilities, clientInfo });

  it('opens one on 2025-06-18 and 2025-11-25 when the client declared elicitation, with the negotiated revision', () => {
    for (const version of ['2025-06-18', '2025-11-25']) {
      expect(sessions.openingFor(init(version, { elicitation: {} }))).toEqual({ protocolVersion: version, capabilities: { elicitation: {} }, client: { name: 'c', version: '1' } });
    }
    // An unsupported request is answered with the SDK's latest revision, which has elicitation.
    expect(sessions.openingFor(init('2099-01-01', { elicitation: { form: {} } }))?.protocolVersion).toBe('2025-11-25');
  });

  it('opens none without elicitation, on revisions without it, or for junk', () => {
    for (const params of [
      init('2025-11-25', {}),
      init('2025-11-25', { elicitation: true }),
      init('2025-11-25', { elicitation: null }),
      init('2025-03-26', { elicitation: {} }),
      init('2024-11-05', { elicitation: {} }),
      init('2025-11-25', { elicitation: {} }, { version: '1' }),
      init('2025-11-25', [{ elicitation: {} }]),
      null,
      'initialize',
    ]) {
      expect(sessions.openingFor(params)).toBeUndefined();
    }
  });

  it('keeps oversize capabilities only as what it acts on, and bounds the client labels', () => {
    const opening = sessions.openingFor(init('2025-11-25', { elicitation: {}, experimental: { junk: 'x'.repeat(10_000) } }, { name: 'n'.repeat(500), version: 7 }));
    expect(opening?.capabilities).toEqual({ elicitation: {} });
    expect(opening?.client).toEqual({ name: 'n'.repeat(200), version: '' });
    expect(toMcpClientInfo({ name: '' })).toBeUndefined();
  });

  it('issues unguessable ids in the format it accepts back', () => {
    const ids = new Set(Array.from({ length: 100 }, () => sessions.newId()));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
