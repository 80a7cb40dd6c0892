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
      .insertInto('oauthClients')
      .values({
        clientId: client.clientId,
        clientSecretHash: client.secretHash,
        clientName: client.clientName,
        redirectUris: client.redirectUris,
        tokenEndpointAuthMethod: client.authMethod,
        createdAt,
      })
      .execute();
  }

  async find(clientId: string): Promise<RegisteredOAuthClient | undefined> {
    const row = await this.db
      .selectFrom('oauthClients')
      .select(['clientId', 'clientName', 'redirectUris', 'tokenEndpointAuthMethod', 'clientSecretHash'])
      .where('clientId', '=', clientId)
      .executeTakeFirst();
    return (
      row && {
        clientId: row.clientId,
        // Registration always stores a name; the column is nullable only by history.
        clientName: row.clientName ?? 'Unnamed client',
        redirectUris: row.redirectUris,
        // Registration stores only the methods it accepts.
        authMethod: row.tokenEndpointAuthMethod as TokenEndpointAuthMethod,
        secretHash: row.clientSecretHash,
      }
    );
  }
}
