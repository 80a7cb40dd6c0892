import type { AppConfig } from '../../../config/app-config.js';
import type { EmbeddingProvider } from './embedding-provider.js';
import { OfflineHashingEmbedder } from './offline-hashing.embedder.js';
import { OpenAiCompatibleEmbedder } from './openai-compatible.embedder.js';

/** The one place the configured embeddings backend is chosen. */
export function createEmbeddingProvider(config: AppConfig['embeddings']): EmbeddingProvider {
  if (config.provider === 'openai') {
    return new OpenAiCompatibleEmbedder({
      baseUrl: config.baseUrl,
      model: config.model,
      dimensions: config.dimensions,
      apiKey: config.apiKey,
      batchSize: config.batchSize,
      timeoutMs: config.timeoutMs,
      // text-embedding-3 models can shorten vectors; other servers reject the field.
      sendDimensions: /^text-embedding-3/.test(config.model),
    });
  }
  return new OfflineHashingEmbedder({ dimensions: config.dimensions });
}
