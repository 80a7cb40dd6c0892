import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, IsUUID, Length, Max, Min } from 'class-validator';

export class SearchDto {
  @ApiProperty({ minLength: 1, maxLength: 2000 })
  @IsString()
  @Length(1, 2000)
  query!: string;

  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  projectId!: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 50, default: 5 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(50)
  topK?: number;

  @ApiPropertyOptional({ enum: ['hybrid', 'vector', 'keyword'], default: 'hybrid' })
  @IsOptional()
  @IsIn(['hybrid', 'vector', 'keyword'])
  mode?: 'hybrid' | 'vector' | 'keyword';

  @ApiPropertyOptional({ type: [String], description: 'Only chunks of these documents' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  @IsUUID('all', { each: true })
  documentIds?: string[];
}
