import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GithubClientFactory } from './github-client.factory.js';
import { GithubReposController } from './github-repos.controller.js';
import { GithubReposService } from './github-repos.service.js';
import { GithubRepository } from './github-repository.entity.js';
import { GithubService } from './github.service.js';
import { GithubToolProvider } from './github.tool-provider.js';
import { AdminOnlyGuard } from './guards/admin-only.guard.js';
import { TokenCipher } from './token-cipher.js';

@Module({
  imports: [TypeOrmModule.forFeature([GithubRepository])],
  controllers: [GithubReposController],
  providers: [TokenCipher, GithubClientFactory, GithubReposService, GithubService, GithubToolProvider, AdminOnlyGuard],
  exports: [GithubService],
})
export class GithubModule {}
