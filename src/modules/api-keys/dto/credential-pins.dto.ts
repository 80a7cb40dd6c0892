import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsOptional, IsString, IsUUID, Matches } from 'class-validator';
import { REPO_FULL_NAME_PATTERN } from '../../../common/validation/repo.js';

/** Pins of an Area A credential (an API key, or an OAuth grant chosen on the consent page). */
export class CredentialPinsDto {
  @ApiPropertyOptional({ type: [String], description: 'Pin the credential to these projects' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsUUID('all', { each: true })
  projectIds?: string[];

  @ApiPropertyOptional({
    type: [String],
    description: 'Pin the credential to these registered repositories (owner/name)',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(REPO_FULL_NAME_PATTERN, { each: true, message: 'each value in repos must be "owner/name"' })
  repos?: string[];

  @ApiPropertyOptional({
    default: false,
    description:
      'Confirm every write tool call with the user first (MCP elicitation; other doors refuse with confirmation_required)',
  })
  @IsOptional()
  @IsBoolean()
  confirmWrites?: boolean;
}
