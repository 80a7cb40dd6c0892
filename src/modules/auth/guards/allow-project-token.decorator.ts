import { SetMetadata } from '@nestjs/common';

export const ALLOW_PROJECT_TOKEN = 'atrium:allow-project-token';

/**
 * Lets a project session token (`atp_…`) call this route besides a user access token. Only for routes
 * that act inside one project (documents, RAG, agent runs): the handler must turn the caller into an
 * Actor with `actorFor(caller, projectId)` so a token used on another project gets a 401.
 */
export const AllowProjectToken = (): MethodDecorator & ClassDecorator => SetMetadata(ALLOW_PROJECT_TOKEN, true);
