import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { AppConfig } from '../../config/app-config.js';
import { APP_CONFIG } from '../../config/app-config.token.js';
import { UsersService } from './users.service.js';

/** ADMIN_EMAIL / ADMIN_PASSWORD: the named user exists and is an admin after every start. */
@Injectable()
export class AdminBootstrapService implements OnApplicationBootstrap {
  private readonly logger = new Logger('AdminBootstrap');

  constructor(
    private readonly users: UsersService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { adminEmail, adminPassword } = this.config.auth;
    if (!adminEmail || !adminPassword || this.config.role === 'worker') return;
    const admin = await this.users.ensureAdmin(adminEmail, adminPassword);
    this.logger.log({ msg: 'admin account ensured', userId: admin.id });
  }
}
