import { Injectable } from '@nestjs/common';

/** Set on SIGTERM: readiness answers 503 from then on while in-flight work finishes. */
@Injectable()
export class ShutdownState {
  private drainingSince: Date | undefined;

  startDraining(): void {
    this.drainingSince ??= new Date();
  }

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }
}
