import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The workplace's shared folder (the IR collections) sits beside the project as ../shared.
 * SHARED_DIR overrides it; a clone made elsewhere falls back to the workplace's own location.
 */
export function sharedDir(): string {
  const candidates = [process.env.SHARED_DIR, join(__dirname, '..', '..', '..', 'shared'), '/work/shared'].filter(
    (candidate): candidate is string => !!candidate,
  );
  const found = candidates.find((candidate) => existsSync(join(candidate, 'data', 'ir')));
  if (!found)
    throw new Error(`The shared data folder was not found (looked in ${candidates.join(', ')}); set SHARED_DIR`);
  return resolve(found);
}
