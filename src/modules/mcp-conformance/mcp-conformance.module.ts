import { Module } from '@nestjs/common';
import { ToolsModule } from '../tools/tools.module.js';
import { ConformanceFixtures } from './conformance-fixtures.js';

/** The conformance suite's fixtures on the MCP endpoint; imported by AppModule only with MCP_CONFORMANCE_FIXTURES=true. */
@Module({
  imports: [ToolsModule],
  providers: [ConformanceFixtures],
})
export class McpConformanceModule {}
