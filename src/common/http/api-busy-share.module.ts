import { Module } from '@nestjs/common';
import { ApiBusySharePublisher } from './api-busy-share.publisher.js';
import { ApiBusySharesRepository } from './api-busy-shares.repository.js';

/**
 * The API's busy share, seen by every process on the database: serving processes publish theirs
 * (ApiBusySharePublisher), worker-only processes read the highest fresh one (the repository, through the RAG
 * module's SharedRequestLoad).
 */
@Module({ providers: [ApiBusySharesRepository, ApiBusySharePublisher], exports: [ApiBusySharesRepository] })
export class ApiBusyShareModule {}
