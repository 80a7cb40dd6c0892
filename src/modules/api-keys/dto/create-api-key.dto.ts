import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, IsUUID, Length, Matches } from 'class-validator';
import { API_KEY_EXPIRY_CHOICES, API_KEY_SCOPES, type ApiKeyExpiry, type ApiKeyScope } from '../api-key-scopes.js';

export class CreateApiKeyDto {
  @ApiProperty({ minLength: 1, maxLength: 100 })
  @IsString()
  @Length(1, 100)
  name: string;

  @ApiProperty({ enum: API_KEY_SCOPES, isArray: true })
  @IsArray()
  @ArrayMinSize(1)
  @IsIn(API_KEY_SCOPES, { each: true, message: `each value in scopes must be one of: ${API_KEY_SCOPES.join(', ')}` })
  scopes: ApiKeyScope[];

  @ApiProperty({ enum: API_KEY_EXPIRY_CHOICES })
  @IsIn(API_KEY_EXPIRY_CHOICES, { message: `expiresIn must be one of: ${API_KEY_EXPIRY_CHOICES.join(', ')}` })
  expiresIn: ApiKeyExpiry;

  @ApiPropertyOptional({ type: [String], description: 'Pin the key to these projects' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsUUID('all', { each: true })
  projectIds?: string[];

  @ApiPropertyOptional({ type: [String], description: 'Pin the key to these registered repositories (owner/name)' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @Matches(/^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/, { each: true, message: 'each value in repos must be "owner/name"' })
  repos?: string[];
}
