import type { AppConfig } from '../../config/app-config.js';
import { toMcpClientInfo } from './mcp-client-info.js';
import type { McpSessionsRepository } from './mcp-sessions.repository.js';
import { McpSessions } from './mcp-sessions.service.js';

describe('McpSessions.openingFor (which initialize opens which session)', () => {
  const config = { mcp: { sessionTtlMs: 60_000 }, secrets: { tokenPepper: 'p'.repeat(32) } } as AppConfig;
  const sessions = new McpSessions({} as McpSessionsRepository, config);
  const init = (
    protocolVersion: unknown,
    capabilities: unknown,
    clientInfo: unknown = { name: 'c', version: '1' },
  ) => ({ protocolVersion, capabilities, clientInfo });

  it('stores one on 2025-06-18 and 2025-11-25 when the client declared elicitation, with the negotiated revision', () => {
    for (const version of ['2025-06-18', '2025-11-25']) {
      expect(sessions.openingFor(init(version, { elicitation: {} }))).toEqual({
        protocolVersion: version,
        capabilities: { elicitation: {} },
        client: { name: 'c', version: '1' },
        stored: true,
      });
    }
    // An unsupported request is answered with the SDK's latest revision, which has elicitation.
    expect(sessions.openingFor(init('2099-01-01', { elicitation: { form: {} } }))?.protocolVersion).toBe('2025-11-25');
  });

  it('opens a label session for a named client without elicitation or on revisions without it, and none for junk', () => {
    for (const params of [
      init('2025-11-25', {}),
      init('2025-11-25', { elicitation: true }),
      init('2025-11-25', { elicitation: null }),
      init('2025-03-26', { elicitation: {} }),
      init('2024-11-05', { elicitation: {} }),
      init('2025-11-25', [{ elicitation: {} }]),
    ]) {
      expect(sessions.openingFor(params)).toMatchObject({ client: { name: 'c', version: '1' }, stored: false });
    }
    for (const params of [init('2025-11-25', { elicitation: {} }, { version: '1' }), null, 'initialize']) {
      expect(sessions.openingFor(params)).toBeUndefined();
    }
  });

  it('a label session resolves for its credential only, and not once altered', async () => {
    const opening = sessions.openingFor(init('2025-11-25', {}, { name: 'Claude Code', version: '2.1.0' }))!;
    const label = sessions.labelSession('key-1', opening);
    expect(await sessions.resolve(label, 'key-1')).toMatchObject({
      protocolVersion: '2025-11-25',
      client: { name: 'Claude Code', version: '2.1.0' },
      canElicit: false,
      stored: false,
    });
    expect(await sessions.resolve(label, 'key-2')).toBeUndefined();
    expect(await sessions.resolve(`${label.slice(0, -1)}${label.endsWith('A') ? 'B' : 'A'}`, 'key-1')).toBeUndefined();
    expect(await sessions.end(label, 'key-1')).toBe('not-endable');
    expect(await sessions.end(label, 'key-2')).toBe('unknown');
  });

  it('answers a label session it verified before alike, and still refuses it to another credential or altered', async () => {
    const fresh = new McpSessions({} as McpSessionsRepository, config);
    const opening = fresh.openingFor(init('2025-11-25', {}, { name: 'Cursor', version: '1.0' }))!;
    const label = fresh.labelSession('key-1', opening);
    const first = await fresh.resolve(label, 'key-1');
    expect(await fresh.resolve(label, 'key-1')).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first?.client)).toBe(true);
    expect(await fresh.resolve(label, 'key-2')).toBeUndefined();
    const [, payload] = label.split('.');
    const forgedPayload = Buffer.from(JSON.stringify(['2025-11-25', 'Someone else', '1.0'])).toString('base64url');
    expect(await fresh.resolve(label.replace(payload, forgedPayload), 'key-1')).toBeUndefined();
    // Another instance (same pepper) verifies it too: nothing is only in this process's memory.
    expect(await new McpSessions({} as McpSessionsRepository, config).resolve(label, 'key-1')).toEqual(first);
  });

  it('bounds what it remembers, and an id dropped from it still verifies', async () => {
    const fresh = new McpSessions({} as McpSessionsRepository, config);
    const labels = Array.from({ length: 4_200 }, (_, i) =>
      fresh.labelSession('key-1', fresh.openingFor(init('2025-11-25', {}, { name: `client ${i}`, version: '1' }))!),
    );
    for (const label of labels) expect(await fresh.resolve(label, 'key-1')).toBeDefined();
    expect((fresh as unknown as { verifiedLabels: Map<string, unknown> }).verifiedLabels.size).toBe(4_096);
    expect((await fresh.resolve(labels[0], 'key-1'))?.client).toEqual({ name: 'client 0', version: '1' });
  });

  it('keeps oversize capabilities only as what it acts on, and bounds the client labels', () => {
    const opening = sessions.openingFor(
      init(
        '2025-11-25',
        { elicitation: {}, experimental: { junk: 'x'.repeat(10_000) } },
        { name: 'n'.repeat(500), version: 7 },
      ),
    );
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
