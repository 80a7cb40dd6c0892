/**
 * Structure-aware chunking over extracted text. Every chunk is an exact span of the input
 * (`text.slice(startOffset, endOffset) === chunk.text`), so a search hit can cite what it quotes.
 *
 * Boundaries are preferred in this order: Markdown heading, paragraph (blank line), sentence, word.
 * A chunk never ends or starts inside a word; the one exception is a single "word" longer than
 * `maxChars` (a base64 blob, a URL wall), which is cut at `maxChars` because no word boundary exists.
 */
export interface ChunkerOptions {
  /** Aim for chunks of about this many characters. */
  targetChars: number;
  /** Characters of trailing context repeated at the start of the next chunk (whole sentences/words). */
  overlapChars: number;
  /** Hard ceiling; a sentence longer than this is split between words. Defaults to 1.5 × target. */
  maxChars?: number;
}

export interface TextChunk {
  index: number;
  text: string;
  startOffset: number;
  endOffset: number;
}

/** Counts the steps of every loop whose length depends on the input (the linear-work spec reads it). */
export interface OperationCounter {
  ops: number;
}

export const DEFAULT_CHUNKER_OPTIONS: ChunkerOptions = { targetChars: 1000, overlapChars: 150 };

/** How strongly the text breaks before a unit: 3 heading, 2 paragraph, 1 sentence, 0 inside a sentence. */
type BreakLevel = 0 | 1 | 2 | 3;

interface Unit {
  start: number;
  end: number;
  breakBefore: BreakLevel;
}

const HEADING = /^ {0,3}#{1,6}(?:\s|$)/;
const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** `counter`, when given, counts the work done (see OperationCounter); every step is O(1) on its own. */
export function chunkText(
  text: string,
  options: Partial<ChunkerOptions> = {},
  counter: OperationCounter = { ops: 0 },
): TextChunk[] {
  const targetChars = Math.max(50, options.targetChars ?? DEFAULT_CHUNKER_OPTIONS.targetChars);
  const overlapChars = Math.max(
    0,
    Math.min(options.overlapChars ?? DEFAULT_CHUNKER_OPTIONS.overlapChars, Math.floor(targetChars / 2)),
  );
  const maxChars = Math.max(targetChars, options.maxChars ?? Math.floor(targetChars * 1.5));
  const units = toUnits(text, maxChars, counter);
  if (units.length === 0) return [];

  const chunks: TextChunk[] = [];
  let first = 0;
  const emit = (lastInclusive: number): void => {
    const startOffset = units[first].start;
    const endOffset = units[lastInclusive].end;
    chunks.push({ index: chunks.length, text: text.slice(startOffset, endOffset), startOffset, endOffset });
  };

  for (let i = 1; i < units.length; i += 1) {
    counter.ops += 1;
    const unit = units[i];
    const currentLength = units[i - 1].end - units[first].start;
    const withUnit = unit.end - units[first].start;
    // A heading opens a new section unless the current chunk is still tiny (a heading directly after a heading).
    const headingBreak = unit.breakBefore === 3 && currentLength >= targetChars / 4;
    if (!headingBreak && withUnit <= targetChars) continue;
    if (!headingBreak && withUnit <= maxChars && unit.breakBefore === 0) continue; // finish the sentence
    emit(i - 1);
    first = headingBreak ? i : overlapStart(units, first, i, overlapChars, counter);
    // The overlap must leave room for the unit that did not fit.
    while (first < i && unit.end - units[first].start > maxChars) {
      counter.ops += 1;
      first += 1;
    }
  }
  emit(units.length - 1);
  return chunks;
}

/** The first unit of the next chunk: back up over whole trailing units of the previous one within `overlapChars`. */
function overlapStart(
  units: Unit[],
  first: number,
  next: number,
  overlapChars: number,
  counter: OperationCounter,
): number {
  if (overlapChars === 0) return next;
  let start = next;
  while (start - 1 > first && units[next - 1].end - units[start - 1].start <= overlapChars) {
    counter.ops += 1;
    start -= 1;
  }
  return start;
}

/** Splits the text into sentence-sized spans (word-sized for over-long sentences), trimmed of whitespace. */
function toUnits(text: string, maxChars: number, counter: OperationCounter): Unit[] {
  const units: Unit[] = [];
  for (const block of blocks(text, counter)) {
    let level: BreakLevel = block.heading ? 3 : 2;
    for (const sentence of sentences(text, block.start, block.end, block.heading, counter)) {
      for (const piece of splitLong(text, sentence.start, sentence.end, maxChars, counter)) {
        counter.ops += 1;
        units.push({ start: piece.start, end: piece.end, breakBefore: level });
        level = 0;
      }
      level = 1;
    }
  }
  return units;
}

interface Span {
  start: number;
  end: number;
}

/** Blocks separated by blank lines; every Markdown heading line is a block of its own. */
function* blocks(text: string, counter: OperationCounter): Generator<Span & { heading: boolean }> {
  const lineRe = /[^\n]*(?:\n|$)/g;
  let blockStart = -1;
  let blockEnd = -1;
  let match: RegExpExecArray | null;
  while ((match = lineRe.exec(text)) !== null) {
    // One step per line plus its length: the regex, slice and trim each read the line once.
    counter.ops += 1 + match[0].length;
    if (match[0].length === 0) break;
    const lineStart = match.index;
    const lineEnd = lineStart + match[0].replace(/\r?\n$/, '').length;
    const line = text.slice(lineStart, lineEnd);
    if (line.trim() === '') {
      if (blockStart >= 0) yield* trimmed(text, blockStart, blockEnd, false, counter);
      blockStart = -1;
    } else if (HEADING.test(line)) {
      if (blockStart >= 0) yield* trimmed(text, blockStart, blockEnd, false, counter);
      yield* trimmed(text, lineStart, lineEnd, true, counter);
      blockStart = -1;
    } else {
      if (blockStart < 0) blockStart = lineStart;
      blockEnd = lineEnd;
    }
  }
  if (blockStart >= 0) yield* trimmed(text, blockStart, blockEnd, false, counter);
}

function* trimmed(
  text: string,
  start: number,
  end: number,
  heading: boolean,
  counter: OperationCounter,
): Generator<Span & { heading: boolean }> {
  while (start < end && /\s/.test(text[start])) {
    counter.ops += 1;
    start += 1;
  }
  while (end > start && /\s/.test(text[end - 1])) {
    counter.ops += 1;
    end -= 1;
  }
  if (end > start) yield { start, end, heading };
}

function sentences(text: string, start: number, end: number, heading: boolean, counter: OperationCounter): Span[] {
  if (heading) return [{ start, end }];
  const result: Span[] = [];
  // The segmenter reads the block once; each segment is one step plus its length (slice, trims).
  counter.ops += end - start;
  for (const segment of sentenceSegmenter.segment(text.slice(start, end))) {
    counter.ops += 1;
    let s = start + segment.index;
    let e = s + segment.segment.length;
    while (s < e && /\s/.test(text[s])) s += 1;
    while (e > s && /\s/.test(text[e - 1])) e -= 1;
    if (e > s) result.push({ start: s, end: e });
  }
  return result;
}

/** Cuts a span longer than `maxChars` at whitespace; a single word longer than that is cut hard. */
function splitLong(text: string, start: number, end: number, maxChars: number, counter: OperationCounter): Span[] {
  if (end - start <= maxChars) return [{ start, end }];
  const pieces: Span[] = [];
  let pieceStart = start;
  while (end - pieceStart > maxChars) {
    let cut = -1;
    for (let i = pieceStart + maxChars; i > pieceStart; i -= 1) {
      counter.ops += 1;
      if (/\s/.test(text[i])) {
        cut = i;
        break;
      }
    }
    let nextStart: number;
    if (cut < 0) {
      cut = pieceStart + maxChars;
      nextStart = cut;
    } else {
      nextStart = cut;
      while (cut > pieceStart && /\s/.test(text[cut - 1])) cut -= 1;
      while (nextStart < end && /\s/.test(text[nextStart])) nextStart += 1;
    }
    pieces.push({ start: pieceStart, end: cut });
    pieceStart = nextStart;
  }
  if (end > pieceStart) pieces.push({ start: pieceStart, end });
  return pieces;
}
