import { embeddingKey, type EmbeddingProvider, type EmbeddingPurpose } from './embedding-provider.js';
import { hash32, tokenize } from './text-features.js';

export interface HashingEmbedderOptions {
  dimensions: number;
  /** Weight of adjacent-word pairs relative to single words. */
  bigramWeight?: number;
  /** Total weight of a word's character n-grams relative to the word itself. */
  charGramWeight?: number;
}

/**
 * The offline default, and honest about it: this is not a neural model and downloads nothing.
 * It is feature hashing (the "hashing trick"): stemmed words, adjacent word pairs and character
 * 3–5-grams are hashed into a fixed number of signed buckets, weighted by sublinear term frequency,
 * and L2-normalised, so cosine similarity is a smoothed lexical overlap that also tolerates
 * morphology and typos. Deterministic, no network, thousands of texts per second. It does not know
 * synonyms; configure EMBEDDINGS_PROVIDER=openai for semantic embeddings.
 */
export class OfflineHashingEmbedder implements EmbeddingProvider {
  readonly provider = 'offline';
  readonly model = 'hash-v1';
  readonly dimensions: number;
  readonly key: string;
  readonly threadOptions: HashingEmbedderOptions;
  private readonly bigramWeight: number;
  private readonly charGramWeight: number;

  constructor(options: HashingEmbedderOptions) {
    this.threadOptions = { ...options };
    this.dimensions = options.dimensions;
    this.bigramWeight = options.bigramWeight ?? 0.5;
    this.charGramWeight = options.charGramWeight ?? 0.5;
    this.key = embeddingKey(this.provider, this.model, this.dimensions);
    this.features = new FeatureTable(this.dimensions);
  }

  async embed(texts: readonly string[], _purpose: EmbeddingPurpose): Promise<number[][]> {
    // Pure CPU on the thread that also serves HTTP: yield to it every few texts, so embedding a batch of
    // an ingest never holds the event loop for long.
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += 1) {
      if (i > 0 && i % 4 === 0) await new Promise((resolve) => setImmediate(resolve));
      vectors.push(this.embedOne(texts[i]));
    }
    return vectors;
  }

  /**
   * Features met before, by integer id, with their bucket and sign (hashing a feature's text is done once), and each
   * word's own features: its `w:` feature and its character n-grams (`c:`), in the order embedOne adds them. The
   * result is the same as hashing every feature of every text (same features, same additions in the same order);
   * the tables are emptied when they grow past MAX_CACHED_FEATURES, between two texts.
   */
  private features: FeatureTable;
  private words = new Map<string, WordFeatures>();

  embedOne(text: string): number[] {
    if (this.features.size > MAX_CACHED_FEATURES) {
      this.features = new FeatureTable(this.dimensions);
      this.words = new Map();
    }
    const table = this.features;
    // The text's features in the order they first appear (the order their buckets are added in), each one's summed
    // weight in table.weight: a feature not yet seen in this text (another stamp) starts from its first weight.
    // Word pairs are mostly new to the tables and seldom repeat, so they are not interned: this text's own, by text,
    // with their summed weight, bucket and sign; `seen` holds a pair as -(its index + 1).
    const seen: number[] = [];
    const stamp = table.nextStamp();
    const add = (feature: number, weight: number): void => {
      if (table.stamp[feature] === stamp) table.weight[feature] += weight;
      else {
        table.stamp[feature] = stamp;
        table.weight[feature] = weight;
        seen.push(feature);
      }
    };
    const pairs = new Map<string, number>();
    const pairWeight: number[] = [];
    const pairBucket: number[] = [];
    const pairSign: number[] = [];
    const addPair = (feature: string, weight: number): void => {
      const index = pairs.get(feature);
      if (index !== undefined) pairWeight[index] += weight;
      else {
        pairs.set(feature, pairWeight.length);
        seen.push(-(pairWeight.length + 1));
        pairWeight.push(weight);
        pairBucket.push(hash32(feature, 0x9e3779b9) % this.dimensions);
        pairSign.push(hash32(feature, 0x7f4a7c15) & 1 ? 1 : -1);
      }
    };
    const tokens = tokenize(text);
    let word = tokens.length > 0 ? this.wordFeatures(tokens[0]) : undefined;
    for (let i = 0; i < tokens.length; i += 1) {
      const next = i + 1 < tokens.length ? this.wordFeatures(tokens[i + 1]) : undefined;
      add(word!.word, 1);
      if (next && this.bigramWeight > 0) addPair(`b:${tokens[i]} ${tokens[i + 1]}`, this.bigramWeight);
      for (const gram of word!.grams) add(gram, word!.gramWeight);
      word = next;
    }
    const vector = new Array<number>(this.dimensions).fill(0);
    for (const feature of seen) {
      const pair = -feature - 1;
      const weight = feature >= 0 ? table.weight[feature] : pairWeight[pair];
      const bucket = feature >= 0 ? table.bucket[feature] : pairBucket[pair];
      const sign = feature >= 0 ? table.sign[feature] : pairSign[pair];
      // Sublinear tf: a word repeated ten times is not ten times as telling.
      vector[bucket] += sign * (weight >= 1 ? 1 + Math.log(weight) : weight);
    }
    let norm = 0;
    for (const value of vector) norm += value * value;
    norm = Math.sqrt(norm);
    if (norm > 0) for (let i = 0; i < vector.length; i += 1) vector[i] /= norm;
    return vector;
  }

  /** A word's `w:` feature and its character 3–5-grams of `<word>` (words over three characters). */
  private wordFeatures(token: string): WordFeatures {
    let found = this.words.get(token);
    if (found) return found;
    const table = this.features;
    const grams: number[] = [];
    if (this.charGramWeight > 0 && token.length > 3) {
      const padded = `<${token}>`;
      for (let n = 3; n <= 5; n += 1) {
        for (let s = 0; s + n <= padded.length; s += 1) grams.push(table.id(`c:${padded.slice(s, s + n)}`));
      }
    }
    found = {
      word: table.id(`w:${token}`),
      grams,
      gramWeight: grams.length > 0 ? this.charGramWeight / grams.length : 0,
    };
    this.words.set(token, found);
    return found;
  }
}

/** Features cached per embedder before its tables are emptied (a few tens of megabytes). */
const MAX_CACHED_FEATURES = 400_000;

interface WordFeatures {
  word: number;
  grams: number[];
  gramWeight: number;
}

/** Feature texts interned as ids, with each one's bucket and sign (two seeded hashes of the text). */
class FeatureTable {
  private readonly ids = new Map<string, number>();
  readonly bucket: number[] = [];
  readonly sign: number[] = [];
  /** Per feature, its weight summed over the text being embedded and that text's stamp (see embedOne). */
  readonly weight: number[] = [];
  readonly stamp: number[] = [];
  private stamps = 0;

  private readonly dimensions: number;

  // No parameter property: the ingest thread runs this file with Node's type stripping, which does not accept them.
  constructor(dimensions: number) {
    this.dimensions = dimensions;
  }

  get size(): number {
    return this.bucket.length;
  }

  id(feature: string): number {
    let id = this.ids.get(feature);
    if (id === undefined) {
      id = this.bucket.length;
      this.ids.set(feature, id);
      this.bucket.push(hash32(feature, 0x9e3779b9) % this.dimensions);
      this.sign.push(hash32(feature, 0x7f4a7c15) & 1 ? 1 : -1);
      this.weight.push(0);
      this.stamp.push(0);
    }
    return id;
  }

  /** A stamp no feature carries yet, for one text. */
  nextStamp(): number {
    this.stamps += 1;
    return this.stamps;
  }
}
