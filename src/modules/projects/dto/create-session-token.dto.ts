import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import type { ProjectTokenRole } from '../../auth/principal.js';

export const SESSION_TOKEN_ROLES = ['editor', 'viewer'] as const;

export class CreateSessionTokenDto {
  @ApiProperty({ minLength: 1, maxLength: 100 })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 43200, default: 1440 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(43200)
  expiresInMinutes: number = 1440;

  @ApiProperty({ enum: SESSION_TOKEN_ROLES })
  @IsIn(SESSION_TOKEN_ROLES)
  role: ProjectTokenRole;
}
