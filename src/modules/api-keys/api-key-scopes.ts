// The scopes a key can carry are declared by the tool providers and read from ScopeCatalog (scope-catalog.ts).

export const API_KEY_EXPIRY_CHOICES = ['never', '30d', '90d', '180d', '1y'] as const;
export type ApiKeyExpiry = (typeof API_KEY_EXPIRY_CHOICES)[number];

const EXPIRY_DAYS: Record<Exclude<ApiKeyExpiry, 'never'>, number> = { '30d': 30, '90d': 90, '180d': 180, '1y': 365 };

export function expiryDate(choice: ApiKeyExpiry, from: Date): Date | null {
  if (choice === 'never') return null;
  return new Date(from.getTime() + EXPIRY_DAYS[choice] * 24 * 3600 * 1000);
}
