import { chunkText } from './chunker.js';

const sentence = (i: number): string => `Sentence number ${i} talks about topic ${i % 7} in some detail.`;

function assertRoundTrip(text: string, chunks: ReturnType<typeof chunkText>): void {
  chunks.forEach((chunk, index) => {
    expect(chunk.index).toBe(index);
    expect(text.slice(chunk.startOffset, chunk.endOffset)).toBe(chunk.text);
    expect(chunk.text).toBe(chunk.text.trim());
  });
}

function assertNoMidWord(text: string, chunks: ReturnType<typeof chunkText>): void {
  const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}]/u.test(c);
  for (const chunk of chunks) {
    expect(isWordChar(text[chunk.startOffset - 1]) && isWordChar(text[chunk.startOffset])).toBe(false);
    expect(isWordChar(text[chunk.endOffset - 1]) && isWordChar(text[chunk.endOffset])).toBe(false);
  }
}

describe('chunkText', () => {
  it('returns nothing for empty or blank text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText('  \n\n \t ')).toEqual([]);
  });

  it('keeps a short text as one chunk with exact offsets', () => {
    const text = '\n\n  Hello world. Second sentence!  \n';
    const chunks = chunkText(text);
    expect(chunks).toHaveLength(1);
    expect(chunks[0].text).toBe('Hello world. Second sentence!');
    assertRoundTrip(text, chunks);
  });

  it('packs sentences up to the target, overlaps whole sentences, and round-trips offsets', () => {
    const text = Array.from({ length: 80 }, (_, i) => sentence(i)).join(' ');
    const chunks = chunkText(text, { targetChars: 300, overlapChars: 80 });
    expect(chunks.length).toBeGreaterThan(10);
    assertRoundTrip(text, chunks);
    assertNoMidWord(text, chunks);
    for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(450);
    for (let i = 1; i < chunks.length; i += 1) {
      // Overlap: the next chunk starts inside the previous one, at a sentence start.
      expect(chunks[i].startOffset).toBeLessThan(chunks[i - 1].endOffset);
      expect(chunks[i].startOffset).toBeGreaterThan(chunks[i - 1].startOffset);
      expect(chunks[i].text.startsWith('Sentence number')).toBe(true);
    }
    // Every character of content is covered.
    expect(chunks[0].startOffset).toBe(0);
    expect(chunks[chunks.length - 1].endOffset).toBe(text.length);
    for (let i = 1; i < chunks.length; i += 1)
      expect(chunks[i].startOffset).toBeLessThanOrEqual(chunks[i - 1].endOffset);
  });

  it('starts a new chunk at a Markdown heading and does not overlap across sections', () => {
    const body = (n: number): string => Array.from({ length: 4 }, (_, i) => sentence(n * 10 + i)).join(' ');
    const text = `# Title\n\n${body(1)}\n\n## Install\n\n${body(2)}\n\n## Usage\n\n${body(3)}\n`;
    const chunks = chunkText(text, { targetChars: 600, overlapChars: 100 });
    assertRoundTrip(text, chunks);
    expect(chunks.map((chunk) => chunk.text.split('\n')[0])).toEqual(['# Title', '## Install', '## Usage']);
  });

  it('prefers paragraph boundaries', () => {
    const para = (n: number): string => Array.from({ length: 3 }, (_, i) => sentence(n * 10 + i)).join(' ');
    const text = [para(1), para(2), para(3), para(4)].join('\n\n');
    const chunks = chunkText(text, { targetChars: 400, overlapChars: 0 });
    assertRoundTrip(text, chunks);
    for (const chunk of chunks) expect(chunk.text.startsWith('Sentence number')).toBe(true);
    expect(chunks.length).toBeGreaterThanOrEqual(2);
  });

  it('splits an over-long sentence between words, never inside one', () => {
    const words = Array.from({ length: 600 }, (_, i) => `word${i}`);
    const text = `${words.join(' ')}.`;
    const chunks = chunkText(text, { targetChars: 200, overlapChars: 30 });
    assertRoundTrip(text, chunks);
    assertNoMidWord(text, chunks);
    for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(300);
  });

  it('cuts a single enormous token only because nothing else is possible', () => {
    const text = `start ${'x'.repeat(1000)} end`;
    const chunks = chunkText(text, { targetChars: 200, overlapChars: 0 });
    assertRoundTrip(text, chunks);
    expect(
      chunks
        .map((c) => c.text)
        .join('')
        .replace(/\s/g, ''),
    ).toBe(text.replace(/\s/g, ''));
  });

  it('handles CRLF, unicode and emoji offsets exactly', () => {
    const text =
      'Ünïcödé façade. 😀 Emoji sentence here.\r\n\r\n## Café\r\nNaïve résumé text. ' + 'Plus more words. '.repeat(40);
    const chunks = chunkText(text, { targetChars: 150, overlapChars: 40 });
    assertRoundTrip(text, chunks);
    assertNoMidWord(text, chunks);
  });

  it('round-trips random texts', () => {
    let seed = 42;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const vocab = [
      'alpha',
      'beta',
      'gamma.',
      'delta,',
      '\n\n',
      '# Head\n',
      'e.g.',
      'x',
      'longerword',
      '?',
      '\n',
      '- item',
    ];
    for (let run = 0; run < 50; run += 1) {
      const text = Array.from(
        { length: 200 + Math.floor(rand() * 800) },
        () => vocab[Math.floor(rand() * vocab.length)],
      ).join(' ');
      const target = 60 + Math.floor(rand() * 400);
      const chunks = chunkText(text, { targetChars: target, overlapChars: Math.floor(rand() * 100) });
      assertRoundTrip(text, chunks);
      assertNoMidWord(text, chunks);
      for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(Math.floor(Math.max(target, 50) * 1.5));
    }
  });
});
