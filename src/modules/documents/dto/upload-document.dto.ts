import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsString, IsUUID, Matches, MaxLength } from 'class-validator';

/** Multipart fields arrive as strings: "true"/"false" become booleans, anything else stays and fails. */
const toBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);

export class UploadDocumentDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  projectId: string;

  @ApiPropertyOptional({ maxLength: 300, description: 'Defaults to the file name' })
  @IsOptional()
  @IsString()
  @MaxLength(300)
  @Matches(/^[^\u0000]*$/, { message: 'title must not contain NUL characters' })
  title?: string;

  @ApiPropertyOptional({ default: false })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  isPublic?: boolean;
}
