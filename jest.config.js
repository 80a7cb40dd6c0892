// ts-jest compiles to CommonJS; NestJS 12 ships ESM, which Jest can load from CJS only
// under --experimental-vm-modules on Node >= 24.9 (see package.json scripts).
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleFileExtensions: ['ts', 'js', 'json'],
  // Sources import siblings as './x.js' (nodenext); map them back to the .ts files.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  rootDir: '.',
};

/**
 * e2e suites that drive what `npm start` runs (`node dist/src/main.js`, built by `nest build` when stale) as child
 * processes, a real browser included: the `built` tier, which `npm run test:fast` leaves out.
 */
const BUILT = ['account-page', 'build-if-stale', 'built-server', 'ingest-sandbox', 'json-logs', 'operations', 'pages-over-http', 'process-lifecycle', 'tracing', 'worker-drain'];

/**
 * Files of the built tier and the drills that time nothing (no bound on a latency, a drain or a recovery) and, like
 * every file, own their database, ports and folders: `npm test` runs them on the Jest workers beside the unit, medium
 * and e2e files (TEST_PHASE=parallel) and only the others one at a time (TEST_PHASE=serial), so a busy neighbour
 * cannot skew a timed file. Without TEST_PHASE each tier is whole (`npm run test:built`, `test:drills`, one file).
 */
const BESIDE = [
  'account-page',
  'build-if-stale',
  'built-server',
  'drill-fuzz',
  'drill-isolation',
  'drill-secrets',
  'json-logs',
  'pages-over-http',
  'tracing',
];
const PHASE = process.env.TEST_PHASE || undefined;
if (PHASE !== undefined && PHASE !== 'parallel' && PHASE !== 'serial') {
  throw new Error(`TEST_PHASE must be "parallel" or "serial" (got "${PHASE}")`);
}
/** A tier's files of this phase: its BESIDE files in parallel, the others in serial, all of them without a phase. */
function ofPhase(beside) {
  if (PHASE === 'parallel') return { testMatch: beside.map((name) => `<rootDir>/test/${name}.e2e-spec.ts`) };
  if (PHASE === 'serial')
    return {
      testPathIgnorePatterns: ['/node_modules/', ...beside.map((name) => `<rootDir>/test/${name}\\.e2e-spec\\.ts$`)],
    };
  return {};
}

/**
 * Five tiers (docs/testing.md):
 * - unit: pure logic beside the source, no I/O.
 * - medium: services of the real modules against a real database (fresh, migrated), no HTTP; rows are made
 *   by factories that insert directly (test/support/medium.ts).
 * - e2e: the whole app over HTTP, in the test's process.
 * - built: the built server as child processes (BUILT above).
 * - drills: crash, outage, load, fuzz and isolation drills (minutes each); `npm run test:fast` skips them.
 */
module.exports = {
  // e2e suites boot the real app against a real database; unit specs finish far below this.
  testTimeout: 60000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...shared, displayName: 'medium', testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'] },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/drill-', ...BUILT.map((name) => `<rootDir>/test/${name}\\.e2e-spec\\.ts$`)],
    },
    {
      ...shared,
      displayName: 'built',
      testMatch: BUILT.map((name) => `<rootDir>/test/${name}.e2e-spec.ts`),
      ...ofPhase(BUILT.filter((name) => BESIDE.includes(name))),
    },
    {
      ...shared,
      displayName: 'drills',
      testMatch: ['<rootDir>/test/drill-*.e2e-spec.ts'],
      ...ofPhase(BESIDE.filter((name) => name.startsWith('drill-'))),
    },
  ],
};
