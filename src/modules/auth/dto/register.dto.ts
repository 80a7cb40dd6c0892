import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsString, Length, Matches, MaxLength } from 'class-validator';

export class RegisterDto {
  @ApiProperty({ example: 'ada@example.com' })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim().toLowerCase() : value))
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(320)
  email: string;

  @ApiProperty({ minLength: 10, maxLength: 200 })
  @IsString()
  @Length(10, 200, { message: 'password must be 10 to 200 characters' })
  @Matches(/\S/, { message: 'password must contain at least one character that is not whitespace' })
  password: string;

  @ApiProperty({ minLength: 1, maxLength: 100 })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @Length(1, 100)
  name: string;
}
