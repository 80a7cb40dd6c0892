/**
 * Counts the test files and tests of each Jest project of jest.config.js (unit, medium, e2e, built, drills) by reading the
 * sources, so the shape of the suite is a reproducible figure rather than an impression. A test is one `it`/`test`
 * call; `it.each(table)` counts one per row and `describe.each(table)` multiplies what it holds, when the table is
 * an array literal (inline or a `const` of the file); a table the script cannot size counts once and is listed. A test
 * behind a condition (`(cond ? it : it.skip)(…)`, or an alias of that) counts as if the condition held: the count is
 * what the suite holds on the real services, not what one environment runs.
 * e2e files are also split by what they start: an in-process app (`startTestApp`), a built process
 * (`startAppProcess`/`startBuiltServer`), or neither.
 *
 * Usage: npm run test:census [-- --files] [-- --json]   (Node 24 runs TypeScript by stripping types)
 */
import { globSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

// This file's folder's parent, from argv (the script runs as TypeScript under Node).
const ROOT = resolve(dirname(process.argv[1]), '..');

interface JestProject {
  displayName: string;
  testMatch: string[];
  testPathIgnorePatterns?: string[];
}

/** The projects of jest.config.js, in its order, with its globs and ignore patterns. */
const PROJECTS = (
  createRequire(join(ROOT, 'jest.config.js'))(join(ROOT, 'jest.config.js')) as { projects: JestProject[] }
).projects.map((project) => ({
  name: project.displayName,
  include: project.testMatch.map((glob) => glob.replace('<rootDir>/', '')),
  exclude: (project.testPathIgnorePatterns ?? []).map((pattern) => new RegExp(pattern.replace('<rootDir>', ROOT))),
}));

interface FileCensus {
  file: string;
  project: string;
  tests: number;
  /** e2e only: what the file starts. */
  boots?: 'in-process app' | 'built process' | 'in-process app + built process' | 'neither';
  unsized: string[];
}

const TEST_CALLS = new Set(['it', 'test']);
const SKIPPED = new Set(['skip', 'todo']);

function unwrap(node: ts.Expression): ts.Expression {
  let inner = node;
  while (ts.isAsExpression(inner) || ts.isSatisfiesExpression(inner) || ts.isParenthesizedExpression(inner))
    inner = inner.expression;
  return inner;
}

function countFile(path: string): { tests: number; unsized: string[] } {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const unsized: string[] = [];
  const constArrays = new Map<string, number>();
  /** `const itOnX = cond ? it : it.skip`: calls of the alias are tests (counted as if the condition holds). */
  const aliases = new Map<string, string>();
  const collectConsts = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      const length = arrayLength(node.initializer);
      if (length !== undefined) constArrays.set(node.name.text, length);
      const init = unwrap(node.initializer);
      const chosen = ts.isConditionalExpression(init) ? unwrap(init.whenTrue) : init;
      if (ts.isIdentifier(chosen) && (TEST_CALLS.has(chosen.text) || chosen.text === 'describe'))
        aliases.set(node.name.text, chosen.text);
    }
    ts.forEachChild(node, collectConsts);
  };
  const arrayLength = (node: ts.Expression): number | undefined => {
    const inner = unwrap(node);
    if (ts.isArrayLiteralExpression(inner)) return inner.elements.length;
    if (ts.isIdentifier(inner)) return constArrays.get(inner.text);
    // `table.filter(…)`: at most the table's rows (an environment may leave some out).
    if (
      ts.isCallExpression(inner) &&
      ts.isPropertyAccessExpression(inner.expression) &&
      inner.expression.name.text === 'filter'
    )
      return arrayLength(inner.expression.expression);
    return undefined;
  };
  collectConsts(source);

  /** `it`, `it.only`, `it.each(t)`, `describe.each(t)`, `(cond ? it : it.skip)`, an alias … as [base name, modifier, each table]. */
  const callee = (call: ts.CallExpression): { base: string; modifier?: string; table?: ts.Expression } | undefined => {
    let expr = unwrap(call.expression);
    if (ts.isConditionalExpression(expr)) expr = unwrap(expr.whenTrue);
    if (ts.isIdentifier(expr))
      return { base: aliases.get(expr.text) ?? (/^describe/.test(expr.text) ? 'describe' : expr.text) };
    if (ts.isPropertyAccessExpression(expr) && ts.isIdentifier(expr.expression))
      return { base: expr.expression.text, modifier: expr.name.text };
    // it.each(table)(name, fn) / it.skip.each(table)(…)
    if (ts.isCallExpression(expr)) {
      const inner = expr.expression;
      if (ts.isPropertyAccessExpression(inner) && inner.name.text === 'each') {
        const target = inner.expression;
        const base = ts.isIdentifier(target)
          ? target.text
          : ts.isPropertyAccessExpression(target) && ts.isIdentifier(target.expression)
            ? target.expression.text
            : undefined;
        const modifier = ts.isPropertyAccessExpression(target) ? target.name.text : undefined;
        if (base) return { base, modifier, table: expr.arguments[0] };
      }
    }
    return undefined;
  };
  const rows = (table: ts.Expression | undefined, line: number): number => {
    if (!table) return 1;
    const length = arrayLength(table);
    if (length !== undefined) return length;
    unsized.push(`line ${line}: ${table.getText(source).slice(0, 60)}`);
    return 1;
  };

  const walk = (node: ts.Node): number => {
    if (ts.isCallExpression(node)) {
      const called = callee(node);
      if (called && (TEST_CALLS.has(called.base) || called.base === 'describe')) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        const times = called.table ? rows(called.table, line) : 1;
        if (TEST_CALLS.has(called.base)) return called.modifier && SKIPPED.has(called.modifier) ? 0 : times;
        const body = node.arguments.find((arg) => ts.isArrowFunction(arg) || ts.isFunctionExpression(arg));
        return body ? times * walkChildren(body) : 0;
      }
    }
    return walkChildren(node);
  };
  const walkChildren = (node: ts.Node): number => {
    let total = 0;
    ts.forEachChild(node, (child) => {
      total += walk(child);
    });
    return total;
  };
  return { tests: walk(source), unsized };
}

function bootsOf(text: string): FileCensus['boots'] {
  const inProcess = /\bstartTestApp\(/.test(text);
  const built = /\b(startAppProcess|startBuiltServer)\(/.test(text);
  if (inProcess && built) return 'in-process app + built process';
  if (inProcess) return 'in-process app';
  if (built) return 'built process';
  return 'neither';
}

function census(): FileCensus[] {
  const files: FileCensus[] = [];
  for (const project of PROJECTS) {
    const paths = new Set(project.include.flatMap((pattern) => globSync(pattern, { cwd: ROOT })));
    for (const file of [...paths].sort()) {
      const absolute = resolve(ROOT, file);
      if (project.exclude.some((pattern) => pattern.test(absolute))) continue;
      const { tests, unsized } = countFile(absolute);
      files.push({
        file: relative(ROOT, absolute),
        project: project.name,
        tests,
        unsized,
        ...(project.name === 'e2e' ? { boots: bootsOf(readFileSync(absolute, 'utf8')) } : {}),
      });
    }
  }
  return files;
}

const files = census();
const args = new Set(process.argv.slice(2));
const totalTests = files.reduce((sum, f) => sum + f.tests, 0);
const byProject = PROJECTS.map(({ name }) => {
  const mine = files.filter((f) => f.project === name);
  return { project: name, files: mine.length, tests: mine.reduce((sum, f) => sum + f.tests, 0) };
});

if (args.has('--json')) {
  console.log(JSON.stringify({ totalTests, projects: byProject, files }, null, 2));
} else {
  const pct = (n: number): string => `${((100 * n) / totalTests).toFixed(1)} %`;
  console.log('project   files  tests  share of tests');
  for (const row of byProject)
    console.log(
      `${row.project.padEnd(8)} ${String(row.files).padStart(6)} ${String(row.tests).padStart(6)}  ${pct(row.tests)}`,
    );
  console.log(`${'all'.padEnd(8)} ${String(files.length).padStart(6)} ${String(totalTests).padStart(6)}`);
  const e2e = files.filter((f) => f.project === 'e2e');
  console.log('\ne2e files by what they start:');
  for (const boots of ['in-process app', 'built process', 'in-process app + built process', 'neither'] as const) {
    const mine = e2e.filter((f) => f.boots === boots);
    if (mine.length)
      console.log(
        `  ${boots.padEnd(31)} ${String(mine.length).padStart(3)} files ${String(mine.reduce((sum, f) => sum + f.tests, 0)).padStart(5)} tests`,
      );
  }
  if (args.has('--files')) {
    console.log('');
    for (const f of files)
      console.log(`${f.project.padEnd(7)} ${String(f.tests).padStart(4)}  ${f.file}${f.boots ? `  (${f.boots})` : ''}`);
  }
  const unsized = files.filter((f) => f.unsized.length);
  if (unsized.length) {
    console.log('\neach-tables not sized from the source (counted once each):');
    for (const f of unsized) for (const u of f.unsized) console.log(`  ${f.file} ${u}`);
  }
}
