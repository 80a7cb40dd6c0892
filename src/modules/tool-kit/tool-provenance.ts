import type { RegisteredTool } from './tool-definition.js';

/** A result's text that its reader did not write: which object carried it (`document:<id>`, `github:owner/name`). */
export interface ForeignText {
  target: string;
}

/**
 * Whether a tool result carries text someone other than `readerId` may have written, from the tool's declared
 * provenance and the objects returned. Deny by default: a tool without a provenance, a result item that is not an
 * object, or one that names no writer, is foreign text; any upstream answer is foreign text, whatever it says.
 * Returns null when every piece of text in the result is the reader's own (or there is none).
 */
export function foreignTextIn(
  tool: RegisteredTool | undefined,
  args: unknown,
  result: unknown,
  readerId: string,
): ForeignText | null {
  const provenance = tool?.definition.provenance;
  const name = tool?.definition.name ?? 'unknown';
  if (!provenance) return { target: `${name}:unknown-provenance` };
  if (provenance.kind === 'none') return null;
  if (provenance.kind === 'upstream') {
    const argument =
      provenance.targetArgument && args && typeof args === 'object'
        ? (args as Record<string, unknown>)[provenance.targetArgument]
        : undefined;
    return { target: typeof argument === 'string' ? `${provenance.object}:${argument}` : provenance.object };
  }
  for (const item of Array.isArray(result) ? result : [result]) {
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      return { target: `${provenance.object}:unknown` };
    const record = item as Record<string, unknown>;
    const writers = provenance.writers
      .map((field) => record[field])
      .filter((writer) => writer !== null && writer !== undefined);
    if (writers.length === 0 || writers.some((writer) => writer !== readerId)) {
      const id = record[provenance.id];
      return { target: `${provenance.object}:${typeof id === 'string' || typeof id === 'number' ? id : 'unknown'}` };
    }
  }
  return null;
}

/** A call that failed: only an upstream tool's failure can carry text from outside (its error answer). */
export function foreignTextInFailure(tool: RegisteredTool | undefined, args: unknown): ForeignText | null {
  return tool?.definition.provenance?.kind === 'upstream' ? foreignTextIn(tool, args, undefined, '') : null;
}
