import { ApiProperty } from '@nestjs/swagger';
import { ArrayMinSize, IsArray, IsIn, IsString, Length } from 'class-validator';
import { CredentialPinsDto } from './credential-pins.dto.js';
import { API_KEY_EXPIRY_CHOICES, type ApiKeyExpiry } from '../api-key-scopes.js';

export class CreateApiKeyDto extends CredentialPinsDto {
  @ApiProperty({ minLength: 1, maxLength: 100 })
  @IsString()
  @Length(1, 100)
  name: string;

  @ApiProperty({
    type: [String],
    description: 'Scope names from GET /api/api-keys/scopes (checked against that catalog)',
  })
  @IsArray()
  @ArrayMinSize(1)
  @IsString({ each: true })
  scopes: string[];

  @ApiProperty({ enum: API_KEY_EXPIRY_CHOICES })
  @IsIn(API_KEY_EXPIRY_CHOICES, { message: `expiresIn must be one of: ${API_KEY_EXPIRY_CHOICES.join(', ')}` })
  expiresIn: ApiKeyExpiry;
}

export class RollApiKeyDto {
  @ApiProperty({ enum: ['1h', '24h', '7d'], description: 'How long the old key keeps working beside the new one' })
  @IsIn(['1h', '24h', '7d'], { message: 'overlap must be one of: 1h, 24h, 7d' })
  overlap: '1h' | '24h' | '7d';
}
