import { Injectable } from '@nestjs/common';
import { sql, type Selectable } from 'kysely';
import type { Users } from '../../database/database.types.js';
import { InjectDb, type Db, type DbExecutor } from '../../database/kysely.provider.js';
import type { UserRole } from './principal.js';

export interface User {
  id: string;
  email: string;
  name: string;
  role: UserRole;
  createdAt: Date;
  updatedAt: Date;
}

/** A user with the scrypt hash of their password (with its parameters): for login and the admin bootstrap only. */
export interface UserWithPassword extends User {
  passwordHash: string;
}

const USER_COLUMNS = ['id', 'email', 'name', 'role', 'createdAt', 'updatedAt'] as const;

function toUser(row: Pick<Selectable<Users>, (typeof USER_COLUMNS)[number]>): User {
  // The column holds only the roles the service writes.
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role as UserRole,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

// Serialises "is this the first user?" so two concurrent sign-ups cannot both become admin.
const FIRST_USER_LOCK = 7_310_001;

/** The `users` table. The password hash leaves it only through {@link findByEmailWithPassword}. */
@Injectable()
export class UsersRepository {
  constructor(@InjectDb() private readonly db: Db) {}

  /** Takes the first-user lock for the rest of the transaction `executor` belongs to. */
  async lockFirstUser(executor: DbExecutor): Promise<void> {
    await sql`SELECT pg_advisory_xact_lock(${FIRST_USER_LOCK})`.execute(executor);
  }

  async anyExists(executor: DbExecutor = this.db): Promise<boolean> {
    const row = await executor.selectFrom('users').select('id').limit(1).executeTakeFirst();
    return row !== undefined;
  }

  async insert(
    user: { id: string; email: string; name: string; passwordHash: string; role: UserRole },
    executor: DbExecutor = this.db,
  ): Promise<User> {
    const row = await executor
      .insertInto('users')
      .values({ id: user.id, email: user.email, name: user.name, passwordHash: user.passwordHash, role: user.role })
      .returning(USER_COLUMNS)
      .executeTakeFirstOrThrow();
    return toUser(row);
  }

  async findById(id: string): Promise<User | undefined> {
    const row = await this.db.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();
    return row && toUser(row);
  }

  /** Emails match case-insensitively. */
  async findByEmailWithPassword(email: string): Promise<UserWithPassword | undefined> {
    const row = await this.db
      .selectFrom('users')
      .select([...USER_COLUMNS, 'passwordHash'])
      .where(sql<string>`lower(email)`, '=', sql<string>`lower(${email})`)
      .executeTakeFirst();
    return row && { ...toUser(row), passwordHash: row.passwordHash };
  }

  async update(id: string, changes: { role?: UserRole; passwordHash?: string }): Promise<void> {
    await this.db
      .updateTable('users')
      .set({ role: changes.role, passwordHash: changes.passwordHash, updatedAt: sql<Date>`now()` })
      .where('id', '=', id)
      .execute();
  }
}
