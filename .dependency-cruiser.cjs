/**
 * Layer rules of src/ (docs/architecture.md draws them): `npm run lint:layers`, run by .ci/run.
 *
 *   composition roots  src/main.ts, worker.ts, app.module.ts, app.factory.ts, healthcheck.ts, src/openapi/
 *   doors              every *.controller.ts, and the tool doors in src/modules/tools (JSON and MCP)
 *   features           src/modules/*, in tiers, lowest first:
 *                        tool-kit (what every feature imports to declare tools, and the scope catalog)
 *                        < credentials (the credential registry every kind plugs into)
 *                        < auth < audit < admin-policy < api-keys < oauth < tools (the registry's doors and ToolsService)
 *                        < the domain features (projects, documents, tasks, rag, github, agent, health)
 *                      so no import between auth, api-keys, oauth, audit and the tool doors runs upward: a credential
 *                      kind plugs into the registry below them all, the audit log takes the Caller from the platform
 *                      (src/common/auth/caller.ts) and hears of refused sign-ins through CredentialEvents.
 *   platform           src/common, src/config, src/database, src/queue
 *
 * A layer imports only layers below it, a feature tier only tiers below it (or itself), and only a module file
 * (*.module.ts) or a composition root imports a door. The imports that break these rules today are listed in
 * KNOWN_DEBT, each by exact file pair: they pass, any new one fails. Remove an entry when its import goes.
 */

/** Feature tiers, lowest first; a module not named here is a domain feature (the top tier). */
const TIERS = [['tool-kit'], ['credentials'], ['auth'], ['audit'], ['admin-policy'], ['api-keys'], ['oauth'], ['tools']];

/** Doors: the HTTP entry points. The tool doors are the JSON and MCP controllers and what only they use. */
const DOOR = '^src/(modules/[^/]+/.+\\.controller\\.ts|modules/tools/(mcp-[^/]+|scope\\.guard|tool-call-body|mcp\\.schemas)\\.ts)$';

/** Current violations, kept so CI passes today; each is debt to pay, never a pattern to copy. */
const KNOWN_DEBT = [
  // platform -> feature: the config reads the extraction limits' defaults from the documents module.
  ['src/config/app-config.ts', 'src/modules/documents/extraction-limits.ts'],
  // platform -> feature: the database provider sets the RAG search session settings on each new connection.
  ['src/database/kysely.provider.ts', 'src/modules/rag/search-session-settings.repository.ts'],
  // a feature importing a door: the worker role's probe server mounts the health controller itself.
  ['src/modules/health/worker-probe.server.ts', 'src/modules/health/health.controller.ts'],
];

const escape = (path) => path.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
const exact = (path) => `^${escape(path)}$`;
/** `pathNot` for a rule's `to`: the known targets of this `from` are let through, nothing else. */
function exceptKnown(fromPattern, toPattern) {
  return KNOWN_DEBT.filter(([from, to]) => new RegExp(fromPattern).test(from) && new RegExp(toPattern).test(to));
}

const PLATFORM = '^src/(common|config|database|queue)/';
const FEATURES = '^src/modules/';
const ROOTS = '^src/(main|worker|app\\.module|app\\.factory|healthcheck)\\.ts$|^src/openapi/';

const forbidden = [];

/** One rule per (from, to) pair; known debt of that pair is excluded by exact file pair. */
function forbid(name, comment, from, to) {
  const known = exceptKnown(from, to);
  if (known.length === 0) {
    forbidden.push({ name, comment, severity: 'error', from: { path: from }, to: { path: to } });
    return;
  }
  const knownFroms = [...new Set(known.map(([file]) => file))];
  // Files with known debt: every target but their known ones is forbidden.
  for (const file of knownFroms) {
    const targets = known.filter(([f]) => f === file).map(([, target]) => exact(target));
    forbidden.push({ name, comment, severity: 'error', from: { path: exact(file) }, to: { path: to, pathNot: targets } });
  }
  forbidden.push({ name, comment, severity: 'error', from: { path: from, pathNot: knownFroms.map(exact) }, to: { path: to } });
}

forbid('platform-imports-feature', 'src/common, config, database and queue sit below every feature (docs/architecture.md)', PLATFORM, `${FEATURES}|${ROOTS}`);
forbid('feature-imports-root', 'features never import a composition root', FEATURES, ROOTS);

// Feature tiers: a tier imports no higher tier; the domain features are above every named tier.
const named = TIERS.flat();
TIERS.forEach((tier, index) => {
  const higher = [...TIERS.slice(index + 1).flat()];
  const from = `^src/modules/(${tier.join('|')})/`;
  const upward = `^src/modules/(${higher.length ? `${higher.join('|')}|` : ''}(?!(${named.join('|')})/)[^/]+)/`;
  forbid(`upward-from-${tier.join('-')}`, `${tier.join(', ')} may import only lower tiers: ${TIERS.slice(0, index).flat().join(', ') || 'platform'} (docs/architecture.md)`, from, upward);
});

forbid(
  'feature-imports-door',
  'a controller or a tool door is imported only by its module file or a composition root (docs/architecture.md)',
  // from: anything but a composition root, a module file or a door itself (a door may use another door's parts)
  `^src/(?!main\\.ts$|worker\\.ts$|app\\.module\\.ts$|app\\.factory\\.ts$|openapi/)(?!.*\\.module\\.ts$)(?!modules/[^/]+/[^/]+\\.controller\\.ts$)(?!modules/tools/(mcp-[^/]+|scope\\.guard|tool-call-body|mcp\\.schemas)\\.ts$)`,
  DOOR,
);

forbidden.push({
  name: 'no-circular-between-modules',
  comment: 'a cycle between two feature modules hides which one is below the other',
  severity: 'error',
  from: { path: '^src/modules/([^/]+)/' },
  to: { path: '^src/modules/', pathNot: '^src/modules/$1/', circular: true },
});

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.spec\\.ts$' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
