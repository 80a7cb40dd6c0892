import type { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { WriteBehindBuffer, type WriteBehindOptions } from './write-behind-buffer.js';

/**
 * A provider that records rows behind the answer through a {@link WriteBehindBuffer} tied to the app's lifecycle:
 * its timer starts with the module and the rows still buffered are written at shutdown. Subclasses say what a row
 * is and how a batch is written (the usage log of keys, the audit log's read and failed calls).
 */
export abstract class WriteBehindRecorder<T> implements OnModuleInit, OnApplicationShutdown {
  private readonly buffer: WriteBehindBuffer<T>;

  protected constructor(options: WriteBehindOptions<T>) {
    this.buffer = new WriteBehindBuffer<T>(options);
  }

  onModuleInit(): void {
    this.buffer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.buffer.stop();
  }

  record(entry: T): void {
    this.buffer.add(entry);
  }

  /** Writes everything recorded so far; resolves once it is in the database (or was kept after a failure). */
  flush(): Promise<void> {
    return this.buffer.flush();
  }
}
