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
    { ...shared, displayName: 'built', testMatch: BUILT.map((name) => `<rootDir>/test/${name}.e2e-spec.ts`) },
    { ...shared, displayName: 'drills', testMatch: ['<rootDir>/test/drill-*.e2e-spec.ts'] },
  ],
};
