import { Module } from '@nestjs/common';
import { SlotLeasesRepository } from './slot-leases.repository.js';
import { SlotLeases } from './slot-leases.js';

/** Import it in any module that caps how many of something a user holds at once across instances (SlotLeases). */
@Module({ providers: [SlotLeasesRepository, SlotLeases], exports: [SlotLeases] })
export class LeasesModule {}
