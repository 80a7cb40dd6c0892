import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { InjectDb, type Db } from '../../database/kysely.provider.js';
import { isUniqueViolation } from '../../database/pg-errors.js';
import { PasswordHasher } from './password-hasher.js';
import type { UserRole } from './principal.js';
import { UsersRepository, type User, type UserWithPassword } from './users.repository.js';

export interface UserView {
  id: string;
  email: string;
  name: string;
  role: UserRole;
  createdAt: string;
}

export function toUserView(user: User): UserView {
  return { id: user.id, email: user.email, name: user.name, role: user.role, createdAt: user.createdAt.toISOString() };
}

@Injectable()
export class UsersService {
  constructor(
    @InjectDb() private readonly db: Db,
    private readonly users: UsersRepository,
  ) {}

  /** Creates a user; the very first user of an installation is an admin. */
  async create(input: { email: string; password: string; name: string }): Promise<User> {
    const passwordHash = await PasswordHasher.hash(input.password);
    try {
      return await this.db.transaction().execute(async (trx) => {
        await this.users.lockFirstUser(trx);
        const role: UserRole = (await this.users.anyExists(trx)) ? 'member' : 'admin';
        return this.users.insert({ id: randomUUID(), email: input.email, name: input.name, passwordHash, role }, trx);
      });
    } catch (error) {
      if (isUniqueViolation(error))
        throw new AppException(ErrorCode.Conflict, 'An account with this email already exists');
      throw error;
    }
  }

  async findById(id: string): Promise<User | null> {
    return (await this.users.findById(id)) ?? null;
  }

  /** With the password hash, for login only. */
  async findByEmailWithPassword(email: string): Promise<UserWithPassword | null> {
    return (await this.users.findByEmailWithPassword(email)) ?? null;
  }

  /** ADMIN_EMAIL/ADMIN_PASSWORD at start-up: create the admin, or promote and re-key an existing user. Idempotent. */
  async ensureAdmin(email: string, password: string): Promise<User> {
    const existing = await this.users.findByEmailWithPassword(email);
    if (!existing) {
      const created = await this.create({ email, password, name: 'Administrator' });
      if (created.role !== 'admin') await this.users.update(created.id, { role: 'admin' });
      return { ...created, role: 'admin' };
    }
    const updates: { role?: UserRole; passwordHash?: string } = {};
    if (existing.role !== 'admin') updates.role = 'admin';
    if (!(await PasswordHasher.verify(password, existing.passwordHash)))
      updates.passwordHash = await PasswordHasher.hash(password);
    if (Object.keys(updates).length > 0) await this.users.update(existing.id, updates);
    const { passwordHash: _hash, ...user } = existing;
    return { ...user, role: 'admin' };
  }
}
