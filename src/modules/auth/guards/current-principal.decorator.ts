import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Principal } from '../principal.js';

/** The authenticated caller of an Area B route, as the global auth guard resolved it. */
export const CurrentPrincipal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  return context.switchToHttp().getRequest<{ user: Principal }>().user;
});
