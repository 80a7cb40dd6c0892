import { CurrentCaller, type Caller } from '../../common/auth/caller.js';
import { Body, Get, HttpCode, Ip, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthService } from './auth.service.js';
import { LoginDto } from './dto/login.dto.js';
import { RegisterDto } from './dto/register.dto.js';
import { Public } from './guards/public.decorator.js';
import { CarriesSecret } from '../../common/http/carries-secret.decorator.js';
import { ApiData, ApiErrors } from '../../common/openapi/api-responses.decorators.js';
import { LoginResultSchema, SignupStateSchema, UserSchema } from './auth.schemas.js';
import { BackendController } from '../../common/http/backend-controller.js';

@ApiTags('auth')
@BackendController('api/auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Public()
  @Get('signup')
  @ApiOperation({
    summary:
      'Whether anyone may create an account here (AUTH_SIGNUP); the account page shows its sign-up form only then',
  })
  @ApiData(200, SignupStateSchema, 'Whether sign-up is open')
  signup() {
    return { open: this.auth.signupOpen() };
  }

  @Public()
  @Post('register')
  @ApiOperation({ summary: 'Create an account (the first account is an admin)' })
  @ApiData(201, UserSchema, 'The new user')
  @ApiErrors(403, 409)
  register(@Body() body: RegisterDto) {
    return this.auth.register(body);
  }

  @Public()
  @CarriesSecret()
  @Post('login')
  @HttpCode(200)
  @ApiOperation({ summary: 'Exchange email + password for a short-lived access token' })
  @ApiData(200, LoginResultSchema, 'The access token (Cache-Control: no-store)')
  @ApiErrors(401)
  login(@Body() body: LoginDto, @Ip() ip: string) {
    return this.auth.login(body, ip);
  }

  @Get('me')
  @ApiOperation({ summary: 'The signed-in user' })
  @ApiData(200, UserSchema, 'The user')
  me(@CurrentCaller() caller: Caller) {
    return this.auth.me(caller.userId);
  }
}
