import { ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  MaxLength,
} from 'class-validator';
import { REPO_FULL_NAME_PATTERN } from '../../../common/validation/repo.js';
import { MAX_ALLOWED_TOOLS } from '../../tool-kit/tool-restriction.js';

/**
 * Pins and narrowing of an Area A credential (an API key, or an OAuth grant chosen on the consent page): projects,
 * repositories, write confirmation, a tools allowlist, read-only and client addresses.
 */
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

  @ApiPropertyOptional({
    type: [String],
    minItems: 1,
    maxItems: MAX_ALLOWED_TOOLS,
    description:
      'Only these tools (names as GET /api/v1/public/mcp/tools lists them), each within the scopes; absent or null: every tool of the scopes. An unknown name, or one outside the scopes, is 400 naming it',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_ALLOWED_TOOLS)
  @IsString({ each: true })
  @MaxLength(64, { each: true })
  tools?: string[];

  @ApiPropertyOptional({
    default: false,
    description: 'Only tools marked readOnlyHint: true, whatever the scopes (writes answer 403 tool_not_allowed)',
  })
  @IsOptional()
  @IsBoolean()
  readOnly?: boolean;

  @ApiPropertyOptional({
    type: [String],
    maxItems: 100,
    description:
      'CIDR ranges (or bare addresses) the credential may be used from, within the admin policy allowedIps; omitted: anywhere. A value that is not one is 400 invalid_argument naming allowedIps',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MaxLength(64, { each: true })
  allowedIps?: string[];
}
