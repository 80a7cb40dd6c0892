import { htmlToText, type OperationCounter } from '../../documents/document-text-extractor.js';
import { chunkText } from './chunker.js';

/**
 * Issue 14: no input shape may make extraction or chunking quadratic. Each adversarial shape is run at
 * sizes doubling three times and the work is counted (every input-dependent loop step of our code and
 * every token the HTML tokenizer hands us), not timed: doubling the input may at most about double the
 * work. (htmlparser2's Parser, used before, shifted its whole open-element stack on every tag: 400,000
 * nested <div> froze the process. The tokenizer-based htmlToText keeps counters instead.)
 */
type Shape = (size: number) => string;

const SHAPES: Record<string, Shape> = {
  'deep nesting': (n) => `${'<div>'.repeat(n)}x${'</div>'.repeat(n)}`,
  'deep nesting, never closed': (n) => `${'<div><span>'.repeat(n)}x`,
  'deep nesting, unmatched end tags': (n) => `${'<div>'.repeat(n)}${'</span>'.repeat(n)}`,
  'one huge line': (n) => 'lorem ipsum '.repeat(n),
  'millions of tiny paragraphs': (n) => 'a\n\n'.repeat(n),
  'tiny sentences': (n) => 'A. '.repeat(n),
  'no whitespace': (n) => 'x'.repeat(n * 10),
  'one huge word among sentences': (n) => `Start here. ${'y'.repeat(n * 10)} end.`,
  'headings only': (n) => '# h\n'.repeat(n),
};

const SIZES = [20_000, 40_000, 80_000, 160_000];

function work(run: (counter: OperationCounter) => void): number {
  const counter = { ops: 0 };
  run(counter);
  return counter.ops;
}

function expectLinear(label: string, counts: number[]): void {
  for (let i = 1; i < counts.length; i += 1) {
    const ratio = counts[i] / Math.max(1, counts[i - 1]);
    if (ratio > 2.2)
      throw new Error(`${label}: work grew ${ratio.toFixed(2)}× when the input doubled (${counts.join(' → ')})`);
  }
  // And overall: 8× the input is at most ~8× the work.
  expect(counts[counts.length - 1] / Math.max(1, counts[0])).toBeLessThanOrEqual(8 * 1.15);
}

describe('linear work on adversarial shapes', () => {
  for (const [name, shape] of Object.entries(SHAPES)) {
    it(`chunker: ${name}`, () => {
      const counts = SIZES.map((size) =>
        work((counter) => chunkText(shape(size), { targetChars: 1000, overlapChars: 150 }, counter)),
      );
      expectLinear(`chunker, ${name}`, counts);
    });

    it(`HTML extraction then chunking: ${name}`, () => {
      const counts = SIZES.map((size) =>
        work((counter) => {
          const text = htmlToText(shape(size), Number.POSITIVE_INFINITY, counter);
          chunkText(text, { targetChars: 1000, overlapChars: 150 }, counter);
        }),
      );
      expectLinear(`html, ${name}`, counts);
    });
  }

  it('counts what it claims: the work is at least proportional to the input', () => {
    const ops = work((counter) => chunkText('lorem ipsum '.repeat(10_000), {}, counter));
    expect(ops).toBeGreaterThanOrEqual(120_000);
  });
});
