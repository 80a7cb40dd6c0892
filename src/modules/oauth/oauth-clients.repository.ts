import { Injectable } from '@nestjs/common';
import { InjectDb, type Db } from '../../database/kysely.provider.js';

export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

/** A client registered through RFC 7591 (clients named by a metadata document URL are never stored). */
export interface RegisteredOAuthClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  authMethod: TokenEndpointAuthMethod;
  /** HMAC of the client secret; null for a public client. */
  secretHash: Buffer | null;
}

/** The `oauth_clients` table. */
@Injectable()
export class OAuthClientsRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  async insert(client: RegisteredOAuthClient, createdAt: Date): Promise<void> {
    await this.db
      .insertInto('oauth_clients')
      .values({
        client_id: client.clientId,
        client_secret_hash: client.secretHash,
        client_name: client.clientName,
        redirect_uris: client.redirectUris,
        token_endpoint_auth_method: client.authMethod,
        created_at: createdAt,
      })
      .execute();
  }

  async find(clientId: string): Promise<RegisteredOAuthClient | undefined> {
    const row = await this.db
      .selectFrom('oauth_clients')
      .select(['client_id', 'client_name', 'redirect_uris', 'token_endpoint_auth_method', 'client_secret_hash'])
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return (
      row && {
        clientId: row.client_id,
        // Registration always stores a name; the column is nullable only by history.
        clientName: row.client_name ?? 'Unnamed client',
        redirectUris: row.redirect_uris,
        // Registration stores only the methods it accepts.
        authMethod: row.token_endpoint_auth_method as TokenEndpointAuthMethod,
        secretHash: row.client_secret_hash,
      }
    );
  }
}
