import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsInt,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';

/** Longest allowlist an admin may set: enough for any organisation's ranges or clients, small enough to check per call. */
export const MAX_POLICY_LIST = 100;

/** A list the admin may also set to null (lifting the rule): at most MAX_POLICY_LIST strings of at most `itemMax`. */
function NullableList(itemMax: number, description?: string): PropertyDecorator {
  return applyDecorators(
    ApiProperty({ type: [String], nullable: true, maxItems: MAX_POLICY_LIST, description }),
    IsDefined(),
    ValidateIf((_, value) => value !== null),
    IsArray(),
    ArrayMaxSize(MAX_POLICY_LIST),
    IsString({ each: true }),
    MaxLength(itemMax, { each: true }),
  );
}

/** The whole policy, every field required (a PUT replaces it); null where a field allows it lifts that rule. */
export class UpdateAdminPolicyDto {
  @ApiProperty({ type: 'integer', nullable: true, minimum: 1, maximum: 3650 })
  @IsDefined()
  @ValidateIf((_, value) => value !== null)
  @IsInt()
  @Min(1)
  @Max(3650)
  maxKeyLifetimeDays: number | null;

  @NullableList(64)
  allowedKeyScopes: string[] | null;

  @ApiProperty()
  @IsBoolean()
  requireConfirmWritesForWriteScopes: boolean;

  @NullableList(64, 'CIDR ranges')
  allowedIps: string[] | null;

  @NullableList(2048)
  allowedOAuthClients: string[] | null;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100_000 })
  @IsInt()
  @Min(1)
  @Max(100_000)
  maxCredentialsPerUser: number;
}
