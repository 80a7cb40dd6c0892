import { redactionsTotal } from '../metrics/metrics.registry.js';

/** Where a redaction happened (a label of atrium_redactions_total). */
export type RedactionSite = 'tool_result' | 'resource_read' | 'run_output' | 'webhook_body' | 'upstream_error';

export const REDACTED = '[redacted]';

/**
 * A credential shape. `text` is the pattern for plain text; `json` the same for JSON text, where a match must stay
 * inside one string literal (only the private-key block can span characters that JSON escapes).
 */
interface SecretShape {
  kind: string;
  text: RegExp;
  json?: RegExp;
}

// The random parts are fixed-length alphanumeric runs, so snake_case words ("tomato_sauce_…") never match.
const SHAPES: SecretShape[] = [
  // Atrium's own: API keys, OAuth access/refresh tokens, client secrets and codes (base62), project tokens (base64url), webhook secrets.
  { kind: 'atrium', text: /(?:atr|ato|atf|atcs|atac)_[A-Za-z0-9]{38}|atp_[A-Za-z0-9_-]{43}|whsec_[A-Za-z0-9_-]{40,}/g },
  { kind: 'github', text: /gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}/g },
  { kind: 'aws', text: /(?:AKIA|ASIA)[A-Z0-9]{16}/g },
  { kind: 'google', text: /AIza[0-9A-Za-z_-]{35}/g },
  { kind: 'slack', text: /xox[abposr]-[0-9A-Za-z-]{10,}/g },
  { kind: 'stripe', text: /[sr]k_live_[0-9A-Za-z]{16,}/g },
  {
    kind: 'private_key',
    text: /-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*$)/g,
    json: /-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?:[^"\\]|\\.)*?-----END[A-Z0-9 ]*PRIVATE KEY-----|(?:[^"\\]|\\.)*)/g,
  },
  { kind: 'jwt', text: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g },
];

/** The shapes whose prefix ends in `_`, by the character before it: found by scanning the underscores only. */
const BEFORE_UNDERSCORE = new Map<number, string[]>(
  Object.entries({
    r: ['atr', 'ghr'],
    p: ['atp', 'ghp'],
    o: ['ato', 'gho'],
    f: ['atf'],
    s: ['atcs', 'ghs'],
    c: ['atac', 'whsec'],
    u: ['ghu'],
    b: ['github'],
    k: ['sk', 'rk'],
  }).map(([char, prefixes]) => [char.charCodeAt(0), prefixes]),
);
const OTHER_CANDIDATES = /(?:AKIA|ASIA)[A-Z0-9]|AIza|xox[a-z]-|PRIVATE KEY|eyJ[A-Za-z0-9_-]{8}/;

/**
 * Whether any credential shape may be in the text: the hot-path test, a few times cheaper than parsing the same
 * JSON. Prefixes ending in `_` are found from the underscores (String#indexOf is fast), the rest by one regex.
 */
export function mayContainSecret(text: string): boolean {
  for (let i = text.indexOf('_'); i !== -1; i = text.indexOf('_', i + 1)) {
    const prefixes = BEFORE_UNDERSCORE.get(text.charCodeAt(i - 1));
    if (!prefixes) continue;
    for (const prefix of prefixes) {
      if (
        prefix.length === 2
          ? text.startsWith(prefix, i - 2) && text.startsWith('live_', i + 1)
          : text.startsWith(prefix, i - prefix.length)
      )
        return true;
    }
  }
  return OTHER_CANDIDATES.test(text);
}

function replaceShapes(text: string, where: RedactionSite, json: boolean): string {
  let out = text;
  for (const shape of SHAPES) {
    const pattern = json && shape.json ? shape.json : shape.text;
    let count = 0;
    out = out.replace(pattern, () => {
      count += 1;
      return REDACTED;
    });
    if (count > 0) redactionsTotal.inc({ kind: shape.kind, where }, count);
  }
  return out;
}

/** No shape is shorter than this (a Slack token: `xoxb-` and ten characters), so shorter strings are skipped unread. */
const SHORTEST_SHAPE = 15;

/** Plain text with every credential shape replaced by `[redacted]` (the same string when there is none). */
export function redactText(text: string, where: RedactionSite): string {
  return text.length >= SHORTEST_SHAPE && mayContainSecret(text) ? replaceShapes(text, where, false) : text;
}

/** JSON text (e.g. a list PostgreSQL wrote) redacted inside its string literals; still valid JSON. */
export function redactJsonText(json: string, where: RedactionSite): string {
  return mayContainSecret(json) ? replaceShapes(json, where, true) : json;
}

/**
 * A value (a tool result, nested objects and arrays) with every string redacted. Copy on write: an object with
 * nothing to redact is returned as it is, so the common case allocates nothing.
 */
export function redactValue<T>(value: T, where: RedactionSite): T {
  if (typeof value === 'string') return redactText(value, where) as T;
  if (Array.isArray(value)) {
    const items: readonly unknown[] = value;
    let copy: unknown[] | undefined;
    for (let i = 0; i < items.length; i += 1) {
      const redacted = redactValue(items[i], where);
      if (redacted !== items[i]) (copy ??= items.slice())[i] = redacted;
    }
    return (copy ?? value) as T;
  }
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const record = value as Record<string, unknown>;
    let copy: Record<string, unknown> | undefined;
    for (const key in record) {
      const inner = record[key];
      // Numbers, booleans, null and short strings (ids' neighbours: statuses, dates) cannot hold a shape.
      if (typeof inner === 'string' ? inner.length < SHORTEST_SHAPE : inner === null || typeof inner !== 'object')
        continue;
      const redacted = redactValue(inner, where);
      if (redacted !== inner) (copy ??= { ...record })[key] = redacted;
    }
    return (copy ?? value) as T;
  }
  return value;
}
