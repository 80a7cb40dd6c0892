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
 * Four tiers (docs/testing.md):
 * - unit: pure logic beside the source, no I/O.
 * - medium: services of the real modules against a real database (fresh, migrated), no HTTP; rows are made
 *   by factories that insert directly (test/support/medium.ts).
 * - e2e: the whole app over HTTP.
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
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/drill-'],
    },
    { ...shared, displayName: 'drills', testMatch: ['<rootDir>/test/drill-*.e2e-spec.ts'] },
  ],
};
