// ts-jest compiles to CommonJS; NestJS 12 ships ESM, which Jest can load from CJS only
// under --experimental-vm-modules on Node >= 24.9 (see package.json scripts).
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
const shared = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleFileExtensions: ['ts', 'js', 'json'],
  // Sources import siblings as './x.js' (nodenext); map them back to the .ts files.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};
module.exports = {
  // e2e suites boot the real app against a real database; unit specs finish far below this.
  testTimeout: 60000,
  projects: [
    { ...shared, displayName: 'unit', rootDir: '.', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    // Services against a real database without HTTP (test/medium); issue-17-tests owns the tier's final shape.
    { ...shared, displayName: 'medium', rootDir: '.', testMatch: ['<rootDir>/test/medium/**/*.medium-spec.ts'] },
    {
      ...shared,
      displayName: 'e2e',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
    },
  ],
};
