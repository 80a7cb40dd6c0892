import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CredentialEvents } from './credential-events.js';
import { CredentialRegistry } from './credential-registry.js';

/** Global: every guard, limiter and the audit log ask the one registry; kinds plug in from their own modules. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [CredentialRegistry, CredentialEvents],
  exports: [CredentialRegistry, CredentialEvents],
})
export class CredentialsModule {}
