import { Module } from '@nestjs/common';
import { ToolCredentialsRepository } from './tool-credentials.repository.js';

/**
 * The SQL API keys and OAuth grants share, in a module of its own so both ApiKeysModule and OAuthModule
 * (which ApiKeysModule imports) can use it without a cycle.
 */
@Module({
  providers: [ToolCredentialsRepository],
  exports: [ToolCredentialsRepository],
})
export class ToolCredentialsModule {}
