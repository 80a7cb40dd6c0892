import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsUUID } from 'class-validator';
import { PageQueryDto } from '../../../common/pagination/page-query.dto.js';
import { AGENT_RUN_STATUSES, type AgentRunStatus } from '../agent-run.types.js';

export class AgentHistoryQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ format: 'uuid' })
  @IsOptional()
  @IsUUID()
  projectId?: string;

  @ApiPropertyOptional({ enum: AGENT_RUN_STATUSES })
  @IsOptional()
  @IsIn(AGENT_RUN_STATUSES as AgentRunStatus[])
  status?: AgentRunStatus;
}
