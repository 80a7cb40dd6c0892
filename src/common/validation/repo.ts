/**
 * A repository's full name, `owner/name`, as pins, tool arguments and registration accept it. GitHub's
 * own rules are narrower; this shape is what may reach a lookup, never a path built from it unchecked.
 */
export const REPO_FULL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;

export function isRepoFullName(value: string): boolean {
  return REPO_FULL_NAME_PATTERN.test(value);
}
