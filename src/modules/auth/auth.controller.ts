import { Body, Controller, Get, HttpCode, Ip, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthService } from './auth.service.js';
import { LoginDto } from './dto/login.dto.js';
import { RegisterDto } from './dto/register.dto.js';
import { CurrentPrincipal } from './guards/current-principal.decorator.js';
import { Public } from './guards/public.decorator.js';
import type { Principal } from './principal.js';
import { CarriesSecret } from '../../common/http/carries-secret.decorator.js';

@ApiTags('auth')
@Controller('api/auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Public()
  @Get('signup')
  @ApiOperation({ summary: 'Whether anyone may create an account here (AUTH_SIGNUP); the account page shows its sign-up form only then' })
  signup() {
    return { open: this.auth.signupOpen() };
  }

  @Public()
  @Post('register')
  @ApiOperation({ summary: 'Create an account (the first account is an admin)' })
  register(@Body() body: RegisterDto) {
    return this.auth.register(body);
  }

  @Public()
  @CarriesSecret()
  @Post('login')
  @HttpCode(200)
  @ApiOperation({ summary: 'Exchange email + password for a short-lived access token' })
  login(@Body() body: LoginDto, @Ip() ip: string) {
    return this.auth.login(body, ip);
  }

  @Get('me')
  @ApiBearerAuth()
  @ApiOperation({ summary: 'The signed-in user' })
  me(@CurrentPrincipal() principal: Principal) {
    return this.auth.me(principal.userId);
  }
}
