/** Every scope a key can carry, in the order the account page shows them. */
export const API_KEY_SCOPES = ['tasks:read', 'tasks:write', 'docs:read', 'docs:write', 'github:read', 'github:write'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export function isApiKeyScope(value: unknown): value is ApiKeyScope {
  return typeof value === 'string' && (API_KEY_SCOPES as readonly string[]).includes(value);
}

export const API_KEY_EXPIRY_CHOICES = ['never', '30d', '90d', '180d', '1y'] as const;
export type ApiKeyExpiry = (typeof API_KEY_EXPIRY_CHOICES)[number];

const EXPIRY_DAYS: Record<Exclude<ApiKeyExpiry, 'never'>, number> = { '30d': 30, '90d': 90, '180d': 180, '1y': 365 };

export function expiryDate(choice: ApiKeyExpiry, from: Date): Date | null {
  if (choice === 'never') return null;
  return new Date(from.getTime() + EXPIRY_DAYS[choice] * 24 * 3600 * 1000);
}
