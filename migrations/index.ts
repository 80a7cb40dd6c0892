import { Init1763700000000 } from './1763700000000-init.js';
import { ProjectsDocuments1763701000000 } from './1763701000000-projects-documents.js';
import { GithubRepositories1763790000008 } from './1763790000008-github-repositories.js';
import { ApiKeys1763791000000 } from './1763791000000-api-keys.js';
import { IdempotencyRecords1763791000001 } from './1763791000001-idempotency-records.js';
import { Tasks1763791000002 } from './1763791000002-tasks.js';
import { AgentRuns1763793000000 } from './1763793000000-agent-runs.js';
import { Rag1763792000000 } from './1763792000000-rag.js';
import { RagDropModelIndex1763794000000 } from './1763794000000-rag-drop-model-index.js';
import { RagPostingsImpact1763795000000 } from './1763795000000-rag-postings-impact.js';
import { ListTimestampsMilliseconds1763796000000 } from './1763796000000-list-timestamps-milliseconds.js';
import { RagStatisticsPerScope1764015000000 } from './1764015000000-rag-statistics-per-scope.js';
import { OAuth1764018000000 } from './1764018000000-oauth.js';
import { AgentRunApprovals1764020000000 } from './1764020000000-agent-run-approvals.js';
import { AgentRunEvents1764020000001 } from './1764020000001-agent-run-events.js';
import { AgentRunWebhooks1764020000002 } from './1764020000002-agent-run-webhooks.js';
import { ConfirmWrites1764020100000 } from './1764020100000-confirm-writes.js';
import { McpSessions1764210600000 } from './1764210600000-mcp-sessions.js';
import { AuditLog1764310000000 } from './1764310000000-audit-log.js';
import { FairShares1795816340645 } from './1795816340645-fair-shares.js';
import { RagPostingsLexemeEstimate1764330000000 } from './1764330000000-rag-postings-lexeme-estimate.js';
import { TaskViewJson1765200000000 } from './1765200000000-task-view-json.js';
import { RagPostingsScope1765300000000 } from './1765300000000-rag-postings-scope.js';
import { AgentRunApprovalAuto1795816277539 } from './1795816277539-agent-run-approval-auto.js';
import { IngestProgress1764014000000 } from './1764014000000-ingest-progress.js';
import { McpRequestStateUses1795817066837 } from './1795817066837-mcp-request-state-uses.js';
import { ProjectTokenRevocation1795817877733 } from './1795817877733-project-token-revocation.js';
import { SqlDefinitionsInSrc1795827176749 } from './1795827176749-sql-definitions-in-src.js';
import { SlotLeases1795827591618 } from './1795827591618-slot-leases.js';
import { RagBulkWrites1795827626768 } from './1795827626768-rag-bulk-writes.js';
import { McpClientAttribution1795829237441 } from './1795829237441-mcp-client-attribution.js';
import { RagSqlDefinitionsInSrc1795829676575 } from './1795829676575-rag-sql-definitions-in-src.js';
import { KeyRollingAndAdminPolicy1795830000000 } from './1795830000000-key-rolling-and-admin-policy.js';
import { CredentialToolRestrictions1795831000000 } from './1795831000000-credential-tool-restrictions.js';
import { FairClaimIndex1795838678426 } from './1795838678426-fair-claim-index.js';
import { RagPostingsChunkIndex1795850374092 } from './1795850374092-rag-postings-chunk-index.js';
import { ApiBusyShares1795860000000 } from './1795860000000-api-busy-shares.js';
import { OAuthCodeAllowedIps1795870000000 } from './1795870000000-oauth-code-allowed-ips.js';
import { RagPendingSegments1795880000000 } from './1795880000000-rag-pending-segments.js';

/**
 * Every migration, in order. Listed by class (not a glob) so the app, the CLI and the tests load the
 * same set whether they run compiled JavaScript or TypeScript. Never edit a committed migration.
 */
export const ALL_MIGRATIONS = [
  Init1763700000000,
  ProjectsDocuments1763701000000,
  GithubRepositories1763790000008,
  ApiKeys1763791000000,
  IdempotencyRecords1763791000001,
  Tasks1763791000002,
  Rag1763792000000,
  AgentRuns1763793000000,
  RagDropModelIndex1763794000000,
  RagPostingsImpact1763795000000,
  ListTimestampsMilliseconds1763796000000,
  IngestProgress1764014000000,
  RagStatisticsPerScope1764015000000,
  OAuth1764018000000,
  AgentRunApprovals1764020000000,
  AgentRunEvents1764020000001,
  AgentRunWebhooks1764020000002,
  ConfirmWrites1764020100000,
  McpSessions1764210600000,
  AuditLog1764310000000,
  RagPostingsLexemeEstimate1764330000000,
  TaskViewJson1765200000000,
  RagPostingsScope1765300000000,
  AgentRunApprovalAuto1795816277539,
  FairShares1795816340645,
  McpRequestStateUses1795817066837,
  ProjectTokenRevocation1795817877733,
  SqlDefinitionsInSrc1795827176749,
  SlotLeases1795827591618,
  RagBulkWrites1795827626768,
  McpClientAttribution1795829237441,
  RagSqlDefinitionsInSrc1795829676575,
  KeyRollingAndAdminPolicy1795830000000,
  CredentialToolRestrictions1795831000000,
  FairClaimIndex1795838678426,
  RagPostingsChunkIndex1795850374092,
  ApiBusyShares1795860000000,
  OAuthCodeAllowedIps1795870000000,
  RagPendingSegments1795880000000,
];
