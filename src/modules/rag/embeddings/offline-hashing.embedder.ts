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

  embedOne(text: string): number[] {
    const features = new Map<string, number>();
    const add = (feature: string, weight: number): void => {
      features.set(feature, (features.get(feature) ?? 0) + weight);
    };
    const tokens = tokenize(text);
    for (let i = 0; i < tokens.length; i += 1) {
      const token = tokens[i];
      add(`w:${token}`, 1);
      if (i + 1 < tokens.length && this.bigramWeight > 0) add(`b:${token} ${tokens[i + 1]}`, this.bigramWeight);
      if (this.charGramWeight > 0 && token.length > 3) {
        const padded = `<${token}>`;
        const grams: string[] = [];
        for (let n = 3; n <= 5; n += 1) {
          for (let s = 0; s + n <= padded.length; s += 1) grams.push(padded.slice(s, s + n));
        }
        const each = this.charGramWeight / grams.length;
        for (const gram of grams) add(`c:${gram}`, each);
      }
    }
    const vector = new Array<number>(this.dimensions).fill(0);
    for (const [feature, weight] of features) {
      const h = hash32(feature, 0x9e3779b9);
      const bucket = h % this.dimensions;
      const sign = hash32(feature, 0x7f4a7c15) & 1 ? 1 : -1;
      // Sublinear tf: a word repeated ten times is not ten times as telling.
      vector[bucket] += sign * (weight >= 1 ? 1 + Math.log(weight) : weight);
    }
    let norm = 0;
    for (const value of vector) norm += value * value;
    norm = Math.sqrt(norm);
    if (norm > 0) for (let i = 0; i < vector.length; i += 1) vector[i] /= norm;
    return vector;
  }
}
