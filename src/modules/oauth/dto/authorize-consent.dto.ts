import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMinSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { CredentialPinsDto } from '../../api-keys/dto/credential-pins.dto.js';
import { API_KEY_EXPIRY_CHOICES, type ApiKeyExpiry } from '../../api-keys/api-key-scopes.js';

/** What the consent page sends: the authorization request it was opened with, plus the user's answer. */
export class AuthorizeConsentDto extends CredentialPinsDto {
  @ApiProperty()
  @IsString()
  @MaxLength(2000)
  clientId: string;

  @ApiProperty()
  @IsString()
  @MaxLength(2000)
  redirectUri: string;

  @ApiProperty()
  @IsString()
  @MaxLength(128)
  codeChallenge: string;

  @ApiProperty({ enum: ['S256'] })
  @IsString()
  codeChallengeMethod: string;

  @ApiPropertyOptional({ description: 'Space-separated scopes the client asked for' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  scope?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  state?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  resource?: string;

  @ApiProperty({ description: 'true = approve, false = deny (the client gets access_denied)' })
  @IsBoolean()
  approve: boolean;

  @ApiPropertyOptional({ type: [String], description: 'A subset of the requested scopes (default: all of them)' })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @IsString({ each: true })
  scopes?: string[];

  @ApiPropertyOptional({
    enum: API_KEY_EXPIRY_CHOICES,
    default: '90d',
    description: 'How long the app stays connected',
  })
  @IsOptional()
  @IsIn(API_KEY_EXPIRY_CHOICES, { message: `expiresIn must be one of: ${API_KEY_EXPIRY_CHOICES.join(', ')}` })
  expiresIn?: ApiKeyExpiry;
}
