import { ConfigError } from './config-error.js';

/** Small typed readers over an env map; each failure names the variable. */
export class EnvReader {
  constructor(private readonly env: Record<string, string | undefined>) {}

  raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!/^-?\d+$/.test(value)) throw new ConfigError(name, `must be an integer, got "${value}"`);
    const parsed = Number(value);
    if (parsed < min || parsed > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${parsed}`);
    return parsed;
  }

  /** A decimal number in [min, max] (e.g. a weight). */
  number(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = /^-?(\d+\.?\d*|\.\d+)$/.test(value) ? Number(value) : NaN;
    if (Number.isNaN(parsed)) throw new ConfigError(name, `must be a number, got "${value}"`);
    if (parsed < min || parsed > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${parsed}`);
    return parsed;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${value}"`);
    }
    return value as T;
  }

  url(name: string, protocols: readonly string[]): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new ConfigError(name, 'must be a URL');
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new ConfigError(name, `must use ${protocols.join(' or ')} (got ${parsed.protocol})`);
    }
    return value;
  }

  list(name: string): string[] {
    const value = this.raw(name);
    return value === undefined
      ? []
      : value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean);
  }

  secret(name: string, minLength: number): string | undefined {
    const value = this.raw(name);
    if (value !== undefined && value.length < minLength) {
      throw new ConfigError(name, `must be at least ${minLength} characters`);
    }
    return value;
  }
}
