import { ApiProperty } from '@nestjs/swagger';
import { ArrayMinSize, IsArray, IsIn, IsString, Length } from 'class-validator';
import { CredentialPinsDto } from './credential-pins.dto.js';
import { API_KEY_EXPIRY_CHOICES, API_KEY_SCOPES, type ApiKeyExpiry, type ApiKeyScope } from '../api-key-scopes.js';

export class CreateApiKeyDto extends CredentialPinsDto {
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
}
