import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';

export class RegisterRepoDto {
  @ApiProperty({ example: 'octocat', description: 'User or organisation that owns the repository' })
  @IsString()
  @Matches(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, { message: 'owner must be a GitHub user or organisation name' })
  owner: string;

  @ApiProperty({ example: 'hello-world' })
  @IsString()
  @Matches(/^[A-Za-z0-9_.-]{1,100}$/, {
    message: 'name must be a GitHub repository name (letters, digits, ".", "-", "_")',
  })
  @Matches(/^(?!\.{1,2}$)/, { message: 'name must be a GitHub repository name' })
  name: string;

  @ApiPropertyOptional({
    description:
      "Token with access to the repository; stored encrypted, never returned. Without one the server's GITHUB_TOKEN is used.",
    writeOnly: true,
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  @Matches(/^\S+$/, { message: 'token must not contain whitespace' })
  token?: string;
}
