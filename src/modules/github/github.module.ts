import { Module } from '@nestjs/common';
import { GithubClientFactory } from './github-client.factory.js';
import { GithubReposController } from './github-repos.controller.js';
import { GithubReposRepository } from './github-repos.repository.js';
import { GithubReposService } from './github-repos.service.js';
import { GithubService } from './github.service.js';
import { GithubToolProvider } from './github.tool-provider.js';
import { TokenCipher } from './token-cipher.js';
import { ToolsModule } from '../tools/tools.module.js';
import { GithubMcpResources } from './github.mcp-resources.js';

@Module({
  imports: [ToolsModule],
  controllers: [GithubReposController],
  providers: [
    GithubMcpResources,
    TokenCipher,
    GithubClientFactory,
    GithubReposRepository,
    GithubReposService,
    GithubService,
    GithubToolProvider,
  ],
  exports: [GithubService],
})
export class GithubModule {}
