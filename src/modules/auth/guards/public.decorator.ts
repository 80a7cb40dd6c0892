import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'atrium:public';

/** Marks a route that needs no credential (register, login, health). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);
