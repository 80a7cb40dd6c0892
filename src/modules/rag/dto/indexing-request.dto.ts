import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsOptional, IsUUID } from 'class-validator';

export class IndexingRequestDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  projectId!: string;

  @ApiPropertyOptional({
    type: [String],
    description:
      'Default: ingest = documents not indexed at their current content; reindex = every document of the project',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10000)
  @IsUUID('all', { each: true })
  documentIds?: string[];
}
