/** Injection token for the parsed {@link AppConfig}. */
export const APP_CONFIG = Symbol('APP_CONFIG');
