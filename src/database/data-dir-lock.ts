import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** Thrown when another live process holds DATA_DIR: start-up stops with this one-line message. */
export class DataDirLockedError extends Error {}

interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

/** Whether a process with this pid exists on this host (EPERM: it exists but belongs to another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One process per DATA_DIR: the embedded engine's files are not safe for two writers. The lock is a
 * file created with O_EXCL holding the owner's pid and host. A lock whose pid is dead on this host (a
 * crash, `kill -9`) is taken over; one from another host (a shared volume) cannot be checked and is
 * never taken over. Our own pid in the file is a lock from an earlier life (a container's pid 1 restarted
 * on the same volume): the process that wrote it is gone.
 *
 * Hand-written rather than proper-lockfile: that library judges staleness by mtime, which would need a
 * timer refreshing the file; a pid check answers at once and names the holder in the message.
 */
export class DataDirLock {
  private constructor(private readonly file: string) {}

  static acquire(dataDir: string): DataDirLock {
    const file = join(dataDir, 'atrium.lock');
    for (let attempt = 0; attempt < 5; attempt += 1) {
      try {
        const fd = openSync(file, 'wx', 0o600);
        const owner: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
        writeSync(fd, JSON.stringify(owner));
        closeSync(fd);
        return new DataDirLock(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const owner = readOwner(file);
      if (owner && owner.host !== hostname()) {
        throw new DataDirLockedError(
          `DATA_DIR ${dataDir} is in use by process ${owner.pid} on host ${owner.host} (since ${owner.since}); stop it, or delete ${file} if that process is gone`,
        );
      }
      if (owner && owner.pid !== process.pid && isProcessAlive(owner.pid)) {
        throw new DataDirLockedError(
          `DATA_DIR ${dataDir} is in use by process ${owner.pid} (since ${owner.since}); stop it or use another DATA_DIR`,
        );
      }
      // Stale (dead pid) or unreadable half-written lock: remove it and race for it again.
      try {
        unlinkSync(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    throw new DataDirLockedError(`DATA_DIR ${dataDir}: could not take ${file}`);
  }

  release(): void {
    try {
      const owner = readOwner(this.file);
      if (owner?.pid === process.pid) unlinkSync(this.file);
    } catch {
      // Already gone: nothing to release.
    }
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockOwner>;
    return typeof parsed.pid === 'number' && typeof parsed.host === 'string' ? (parsed as LockOwner) : undefined;
  } catch {
    return undefined;
  }
}
