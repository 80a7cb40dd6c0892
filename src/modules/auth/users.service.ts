import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, Repository } from 'typeorm';
import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';
import { isUniqueViolation } from '../../database/pg-errors.js';
import { PasswordHasher } from './password-hasher.js';
import type { UserRole } from './principal.js';
import { User } from './user.entity.js';

// Serialises "is this the first user?" so two concurrent sign-ups cannot both become admin.
const FIRST_USER_LOCK = 7_310_001;

@Injectable()
export class UsersService {
  constructor(
    @InjectRepository(User) private readonly users: Repository<User>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** Creates a user; the very first user of an installation is an admin. */
  async create(input: { email: string; password: string; name: string }): Promise<User> {
    const passwordHash = await PasswordHasher.hash(input.password);
    try {
      return await this.dataSource.transaction(async (manager) => {
        await manager.query('SELECT pg_advisory_xact_lock($1)', [FIRST_USER_LOCK]);
        const anyUser = await manager.getRepository(User).exists();
        const role: UserRole = anyUser ? 'member' : 'admin';
        const user = manager.getRepository(User).create({ id: randomUUID(), email: input.email, name: input.name, passwordHash, role });
        return manager.getRepository(User).save(user);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppException(ErrorCode.Conflict, 'An account with this email already exists');
      throw error;
    }
  }

  findById(id: string): Promise<User | null> {
    return this.users.findOneBy({ id });
  }

  /** With the password hash, for login only. */
  findByEmailWithPassword(email: string): Promise<User | null> {
    return this.users
      .createQueryBuilder('u')
      .addSelect('u.passwordHash')
      .where('lower(u.email) = lower(:email)', { email })
      .getOne();
  }

  /** ADMIN_EMAIL/ADMIN_PASSWORD at start-up: create the admin, or promote and re-key an existing user. Idempotent. */
  async ensureAdmin(email: string, password: string): Promise<User> {
    const existing = await this.findByEmailWithPassword(email);
    if (!existing) {
      const created = await this.create({ email, password, name: 'Administrator' });
      if (created.role !== 'admin') await this.users.update({ id: created.id }, { role: 'admin' });
      return { ...created, role: 'admin' };
    }
    const updates: Partial<User> = {};
    if (existing.role !== 'admin') updates.role = 'admin';
    if (!(await PasswordHasher.verify(password, existing.passwordHash))) updates.passwordHash = await PasswordHasher.hash(password);
    if (Object.keys(updates).length > 0) await this.users.update({ id: existing.id }, updates);
    return { ...existing, ...updates };
  }
}
