import { named, nullable, object, timestamp, uuid } from '../../common/openapi/openapi-schema.js';
import { AUDIT_ACTIONS, AUDIT_VIA } from './audit-entry.js';

export const AuditEntrySchema = named(
  'AuditEntry',
  object({
    id: { ...uuid, description: 'A UUIDv7: ids sort by time' },
    at: timestamp,
    action: { type: 'string', enum: [...AUDIT_ACTIONS] },
    actor: object(
      {
        userId: nullable(uuid),
        via: { type: 'string', enum: [...AUDIT_VIA] },
        credentialId: {
          ...nullable(uuid),
          description: 'The API key, OAuth grant or project session token; null for a user access token',
        },
        clientName: { type: 'string', description: "The MCP client's clientInfo.name, or the OAuth client's name" },
        clientVersion: { type: 'string', description: "The MCP client's clientInfo.version" },
        runId: { ...uuid, description: 'The agent run whose tool call this was' },
      },
      ['clientName', 'clientVersion', 'runId'],
    ),
    target: nullable(object({ type: { type: 'string' }, id: { type: 'string' } })),
    outcome: object({ status: { type: 'string', enum: ['ok', 'error'] }, code: { type: 'string' } }, ['code']),
    details: {
      type: 'object',
      additionalProperties: true,
      description: 'tool.call: {tool, arguments} with secrets and document bodies left out',
    },
  }),
);
