import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsObject, IsOptional, Max, Min } from 'class-validator';

export class ApproveStepDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The index of the step waiting for approval' })
  @IsInt()
  @Min(0)
  @Max(10_000)
  stepIndex!: number;

  @ApiProperty({ enum: ['approve', 'reject'] })
  @IsIn(['approve', 'reject'])
  decision!: 'approve' | 'reject';

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Edited arguments (approve only), validated like any call of the tool',
  })
  @IsOptional()
  @IsObject()
  arguments?: Record<string, unknown>;
}
