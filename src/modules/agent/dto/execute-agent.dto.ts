import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AGENT_RUN_APPROVALS, type AgentRunApproval } from '../agent-run.types.js';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  Min,
} from 'class-validator';

export class ExecuteAgentDto {
  @ApiProperty({ format: 'uuid', description: 'The project the run acts in; the caller must be a member' })
  @IsUUID()
  projectId!: string;

  @ApiProperty({ minLength: 1, maxLength: 8000, description: 'What to do or answer' })
  @IsString()
  @Length(1, 8000)
  input!: string;

  @ApiPropertyOptional({
    type: [String],
    description:
      'Allowlist of tool names offered to the model (default: every tool the caller may use); unknown names are a 400',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(/^[a-z][a-z0-9_]{0,63}$/, { each: true, message: 'each tool name must be a snake_case tool name' })
  tools?: string[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 20,
    default: 8,
    description: 'Maximum model turns before the run fails',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(20)
  maxSteps?: number;

  @ApiPropertyOptional({
    enum: AGENT_RUN_APPROVALS,
    default: 'auto',
    description:
      'When the run stops before a write tool call until POST /api/agent/approve/:jobId. "auto" (default): once the run has read text its starter did not write ' +
      '(documents by others, public ones included; GitHub issue/PR bodies and commit messages; tasks created by or assigned to others; any upstream answer), ' +
      'see untrustedSince. "writes": before every write. "none": never — text the run reads can then steer every write it makes with your rights (send it only on purpose).',
  })
  @IsOptional()
  @IsIn(AGENT_RUN_APPROVALS as AgentRunApproval[])
  approval?: AgentRunApproval;

  @ApiPropertyOptional({
    maxLength: 2000,
    description:
      'https URL on a public address, POSTed (signed) on awaiting_approval and the final state; the answer then carries webhookSecret once',
  })
  @IsOptional()
  @IsString()
  @Length(1, 2000)
  webhookUrl?: string;
}
