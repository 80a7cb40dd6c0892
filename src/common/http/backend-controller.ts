import { applyDecorators, Controller, UseInterceptors, type INestApplication } from '@nestjs/common';
import { INTERCEPTORS_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService } from '@nestjs/core';
import { TOOL_API_PREFIX } from './api-area.js';
import { EnvelopeInterceptor } from './envelope.interceptor.js';

/**
 * An Area B controller: its routes answer in the `{success, data, error, traceId}` envelope (EnvelopeInterceptor).
 *
 * Per controller rather than a global interceptor because any interceptor on a route makes Nest run the handler
 * through a chain of RxJS observables (a ReplaySubject, a client-disconnect stream, tap/takeUntil/switchMap): on the
 * tool-call route, which the envelope never wraps, that was a large share of the gateway's allocations
 * (docs/perf/gateway.md). That no Area B controller can forget it is checked at boot (assertBackendRoutesEnveloped).
 */
export function BackendController(prefix: string): ClassDecorator {
  return applyDecorators(Controller(prefix), UseInterceptors(EnvelopeInterceptor));
}

/**
 * Fails the boot when a route under `/api/` outside Area A is not enveloped (neither its controller nor its handler
 * wears EnvelopeInterceptor): what the global interceptor guaranteed, kept as a rule that cannot be missed.
 */
export function assertBackendRoutesEnveloped(app: INestApplication): void {
  const unwrapped: string[] = [];
  const enveloped = (target: object): boolean =>
    ((Reflect.getMetadata(INTERCEPTORS_METADATA, target) as unknown[] | undefined) ?? []).includes(EnvelopeInterceptor);
  const paths = (target: object): string[] => {
    const value = Reflect.getMetadata(PATH_METADATA, target) as string | string[] | undefined;
    return (Array.isArray(value) ? value : [value ?? '']).map((path) => path.replace(/^\/+|\/+$/g, ''));
  };
  for (const wrapper of app.get(DiscoveryService, { strict: false }).getControllers()) {
    const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
    if (!controller) continue;
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name];
      if (
        name === 'constructor' ||
        typeof handler !== 'function' ||
        Reflect.getMetadata(PATH_METADATA, handler) === undefined
      )
        continue;
      for (const prefix of paths(controller)) {
        for (const path of paths(handler)) {
          const full = `/${[prefix, path].filter(Boolean).join('/')}`;
          const backend = full.startsWith('/api/') && !`${full}/`.startsWith(TOOL_API_PREFIX);
          if (backend && !enveloped(controller) && !enveloped(handler))
            unwrapped.push(`${controller.name}.${name} (${full})`);
        }
      }
    }
  }
  if (unwrapped.length > 0)
    throw new Error(`Area B routes without the response envelope (use @BackendController): ${unwrapped.join(', ')}`);
}
