/**
 * Redaction of model-facing text (docs/architecture.md §5): no stack frames, absolute paths, tokens and keys,
 * values named as credentials (`DB_PASS=…`, `AccountKey=…`, `--password …`, an `UPPER_NAME=` and
 * a token), credentials in URLs, connection strings, private IPs, internal host names, optionally
 * emails, and the values of arguments the policy marks sensitive.
 *
 * This file is the engine; the patterns are data, by family, in redact/: input hygiene
 * (hygiene.ts), caller-supplied values and patterns (values.ts), stack frames of each runtime
 * (stack-frames.ts), URLs and credentials in transit (urls-credentials.ts), vendors' key formats
 * (vendor-keys.ts), values named as credentials (named-values.ts), keys known by their shape
 * (key-shapes.ts), and locations: addresses and hosts (addresses-hosts.ts) and paths (paths.ts),
 * read in one pass (locations.ts). {@link redact} applies them in that order (PEM blocks, a key
 * shape, before the frames), reads what still holds escapes again decoded (escapes.ts), then
 * collapses whitespace and caps the output.
 *
 * Work is bounded: the input is cut to the cap plus a margin, redacted, then the output is capped.
 * Every built-in pattern runs in linear time: each unbounded quantifier is a single character
 * class (never nested in another quantifier), and token patterns start with a look-behind that
 * excludes their own character class, so a run of look-alike characters is scanned once, not once
 * per position.
 */
import { IN_URL_PATH_WITH_EMAILS } from "./redact/addresses-hosts.ts";
import { BREAK_MARK, holdsCharEscape, markJsonBreaks, redactEscaped } from "./redact/escapes.ts";
import {
  ANSI_ESCAPE,
  CONTROL_CHARS,
  collapseSpaces,
  dropTrailingToken,
  INVISIBLE_CHARS,
  sanitize,
  UNEVEN_SPACE,
} from "./redact/hygiene.ts";
import { KEY_SHAPE_RULES, PEM_BLOCK } from "./redact/key-shapes.ts";
import { LOCATIONS_WITH_EMAILS, redactLocations } from "./redact/locations.ts";
import { NAMED_VALUE_RULES } from "./redact/named-values.ts";
import { REDACTED } from "./redact/placeholders.ts";
import { applySecretRule, type SecretGroup, type SecretRule } from "./redact/rule.ts";
import { dropStackFrames, FRAME_PATTERNS } from "./redact/stack-frames.ts";
import { HEADER_RULES, SCHEMELESS_CREDENTIAL_RULES, URL_RULES } from "./redact/urls-credentials.ts";
import {
  applyPatterns,
  MIN_SENSITIVE_LENGTH,
  overlapWithPrefix,
  removeValues,
  sensitiveVariants,
} from "./redact/values.ts";
import {
  VENDOR_PREFIX_RULES,
  VENDOR_SHAPE_RULES,
  VENDOR_TOKEN_RULES,
} from "./redact/vendor-keys.ts";
import { allowedListed, MAX_KEPT_VALUES, splitKept } from "./redact-keep.ts";

// The scans the normalizer and the judge's other passes share, and what the tests read.
export { collapseSpaces } from "./redact/hygiene.ts";
export {
  LOCATIONS_WITH_EMAILS,
  locationEnd,
  redactLocation,
  redactLocations,
} from "./redact/locations.ts";
export { hasCredentialKey, mayHoldFlag } from "./redact/named-values.ts";
export { applySecretRule, type SecretRule } from "./redact/rule.ts";
export { charTable, hasRun, isWhitespace, replaceAnchored } from "./redact/scan.ts";
export { mayHoldFrames } from "./redact/stack-frames.ts";

/** Options of {@link redact}. */
export interface RedactOptions {
  /**
   * Max characters of output. Non-finite values fall back to the default; negative ones mean 0.
   * @default 400
   */
  readonly maxLength?: number;
  /**
   * Also redact email addresses.
   * @default false
   */
  readonly emails?: boolean;
  /**
   * Values to remove wherever they appear (values of arguments the policy marks sensitive), in
   * any case, composed or decomposed (NFC, NFD), without the invisible marks and control
   * characters the text loses before they are removed, and in their URL-encoded and JSON-escaped
   * forms. Values shorter than 4 characters are ignored.
   */
  readonly sensitiveValues?: readonly string[];
  /**
   * Values that may stay as written where they stand alone in the text (the string values of the
   * call's own arguments: the model sent them): a path, URL, host, IP or email equal to one is not
   * replaced. A value is not kept when it holds a sensitive value, a secret-shaped token (`sk-`,
   * `ghp_`, a JWT, a PEM block…) or a URL redaction would change (credentials, a private host, a
   * query string); values shorter than 4 characters and past the 32nd are ignored. Stack frames
   * and secrets are removed as ever. Directories a server lists as allowed in a refusal ("… not in
   * /a, /b") are kept without being given.
   */
  readonly keepValues?: readonly string[];
  /**
   * Extra patterns from the policy: source strings in RE2 syntax (case-sensitive, run by a
   * linear-time engine, so no pattern can stall on a long text), or RegExp objects from code
   * (their flags are kept, `g` is added; the caller answers for their cost). A source the engine
   * cannot run throws; the policy schema refuses it at load.
   */
  readonly patterns?: readonly (string | RegExp)[];
}

const DEFAULT_MAX_LENGTH = 400;
const MIN_INPUT_MARGIN = 2048;

/**
 * How many input characters {@link redact} reads for a given output cap: the cap plus a margin
 * of at least 2048 characters (or four times the cap), so text that redaction shrinks (dropped
 * stack frames, replaced paths) still fills the output.
 * @internal Exported for tests; not part of the public API.
 */
export function inputLimit(maxLength: number): number {
  return maxLength + Math.max(MIN_INPUT_MARGIN, maxLength * 4);
}

/**
 * The secret rules, in order, in groups whose test holds whenever the test of one of their rules
 * does: when it fails, the whole group is skipped. URLs first, so a key-value rule cannot eat half
 * of `user:pwd@host`; named values before the keys known by their shape alone.
 * @internal Exported for tests; not part of the public API.
 */
export const SECRET_GROUPS: readonly SecretGroup[] = [
  URL_RULES,
  SCHEMELESS_CREDENTIAL_RULES,
  HEADER_RULES,
  VENDOR_TOKEN_RULES,
  VENDOR_PREFIX_RULES,
  VENDOR_SHAPE_RULES,
  NAMED_VALUE_RULES,
  KEY_SHAPE_RULES,
];

const SECRET_RULES: readonly SecretRule[] = SECRET_GROUPS.flatMap((group) => group.rules);

/** The secret rules whose reading a quote changes (see {@link redactQuoted}). */
const QUOTED_GROUPS: readonly SecretGroup[] = [HEADER_RULES, NAMED_VALUE_RULES];

/**
 * Every built-in pattern, for the linear-time checks in the tests.
 * @internal Exported for tests; not part of the public API.
 */
export const BUILTIN_PATTERNS: readonly RegExp[] = [
  UNEVEN_SPACE,
  ANSI_ESCAPE,
  CONTROL_CHARS,
  INVISIBLE_CHARS,
  PEM_BLOCK,
  ...FRAME_PATTERNS,
  ...SECRET_RULES.map(([pattern]) => pattern),
  LOCATIONS_WITH_EMAILS,
  IN_URL_PATH_WITH_EMAILS,
];

/** Every secret rule whose test holds, in order. */
function redactSecrets(text: string): string {
  let out = text;
  for (const group of SECRET_GROUPS) {
    if (!group.may(out)) continue;
    for (const rule of group.rules) if (rule[2](out)) out = applySecretRule(rule, out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Output

function capOutput(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  if (maxLength <= 1) return maxLength === 1 ? "…" : "";
  let end = maxLength - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  let head = text.slice(0, end);
  // Cut at a word boundary when one is near, and never leave half a placeholder.
  if (text.charAt(end) !== " ") {
    const space = head.lastIndexOf(" ");
    if (space > 0 && end - space <= 40) head = head.slice(0, space);
  }
  const open = head.lastIndexOf("[");
  if (open > head.lastIndexOf("]") && head.length - open <= 12) head = head.slice(0, open);
  return `${head.trimEnd()}…`;
}

function resolveMaxLength(value: number | undefined): number {
  if (value === undefined || !Number.isFinite(value)) return DEFAULT_MAX_LENGTH;
  return Math.max(0, Math.floor(value));
}

/**
 * Redacts model-facing text: drops stack frames and replaces secrets, credentials and internal
 * locations with short placeholders (`[redacted]`, `[token]`, `[path]`, `[url]`, `[ip]`,
 * `[host]`, `[email]`). Whitespace is collapsed; the result is one line of at most `maxLength`
 * characters, ending in `…` when cut. Pure; work is bounded by `maxLength`, not by the input.
 *
 * Public URLs without credentials stay (minus their query string and fragment), as do ordinary
 * words, tool names, numbers, public host names and relative paths, so messages stay useful.
 *
 * @example
 * redact('GET https://bob:hunter2@api.example.com/v1 failed: open /home/bob/.env')
 * // → 'GET [url] failed: open [path]'
 * @throws when a string in `options.patterns` is not a regular expression in RE2 syntax (the
 * policy refuses such patterns at load).
 */
export function redact(text: string, options: RedactOptions = {}): string {
  const maxLength = resolveMaxLength(options.maxLength);
  const emails = options.emails === true;
  const sensitive = sensitiveVariants(options.sensitiveValues);
  const keep = options.keepValues ?? NO_VALUES;
  const limit = inputLimit(maxLength);

  let out: string;
  if (text.length > limit) {
    // Cut first (bounded work), then drop what the cut may have split: the last token, and the
    // start of a sensitive value (which can contain spaces).
    out = dropTrailingToken(sanitize(text.slice(0, limit)));
    for (const value of sensitive) {
      const overlap = overlapWithPrefix(out, value);
      if (overlap > 0) out = out.slice(0, out.length - overlap);
    }
  } else {
    out = sanitize(text);
  }

  // What holds escapes is read decoded too (redact/escapes.ts): what the same steps replace there
  // is replaced where it is written. First, before the text as written is read, when an escape
  // may sit inside a secret (`sk-proj-ABC\u0044EF…`): as written the secret shows only up to or
  // from the escape, and a placeholder over that part would leave the rest, which decoded no
  // longer reads as a secret.
  const readDecoded = (decoded: string, quotesOnly: boolean) =>
    quotesOnly
      ? redactQuoted(decoded, sensitive, options.patterns)
      : redactValues(decoded, sensitive, options.patterns, emails, keep);
  if (holdsCharEscape(out)) out = redactEscaped(out, readDecoded);
  // What a JSON `\n` or `\t` is glued to is read as the start of a line (redact/escapes.ts).
  const marked = markJsonBreaks(out);
  const hasMarks = marked !== out;
  out = redactValues(marked, sensitive, options.patterns, emails, keep, true);
  if (hasMarks) out = out.replaceAll(BREAK_MARK, "");
  // Then again, for what the steps as written left holding escapes.
  out = redactEscaped(out, readDecoded);
  out = collapseSpaces(out);
  out = out.trim();
  return capOutput(out, maxLength);
}

const NO_VALUES: readonly string[] = [];

/**
 * What {@link redactValues} would add to a text read again with its `\"` and `\'` decoded and no
 * other escape: the rules that read quotes (headers and named values: `{\"password\":\"x\"}`),
 * and the caller's values and patterns. Paths, URLs, addresses and keys by their shape read the
 * same either way.
 */
function redactQuoted(
  text: string,
  sensitive: readonly string[],
  patterns: RedactOptions["patterns"],
): string {
  let out = applyPatterns(removeValues(text, sensitive), patterns);
  for (const group of QUOTED_GROUPS) {
    if (!group.may(out)) continue;
    for (const rule of group.rules) if (rule[2](out)) out = applySecretRule(rule, out);
  }
  return out;
}

/**
 * The steps of {@link redact} that replace spans with placeholders, in their order: the caller's
 * values and patterns, PEM blocks, stack frames (`frames`: dropped from the text as written only,
 * not when a decoded text is read again, redact/escapes.ts), secrets, then locations.
 */
function redactValues(
  text: string,
  sensitive: readonly string[],
  patterns: RedactOptions["patterns"],
  emails: boolean,
  keep: readonly string[],
  frames = false,
): string {
  let out = removeValues(text, sensitive);
  out = applyPatterns(out, patterns);
  if (out.includes("-----BEGIN ")) out = out.replace(PEM_BLOCK, REDACTED);
  if (frames) out = dropStackFrames(out);
  out = redactSecrets(out);
  return redactLocationsKeeping(out, emails, keepable(keep, sensitive), sensitive);
}

/**
 * {@link redactLocations}, leaving as written the kept values and the directories the text lists
 * as allowed, where they stand alone. Runs after secrets are removed: a kept value a secret rule
 * changed no longer stands in the text as it was sent.
 */
function redactLocationsKeeping(
  text: string,
  emails: boolean,
  keep: readonly string[],
  sensitive: readonly string[],
): string {
  const allowed = keepable(allowedListed(text), sensitive);
  if (keep.length === 0 && allowed.length === 0) return redactLocations(text, emails);
  let out = "";
  for (const piece of splitKept(text, [...keep, ...allowed])) {
    out += piece.kept ? piece.text : redactLocations(piece.text, emails);
  }
  return out;
}

/** The values that may be kept: long enough, not sensitive, nothing a secret rule would touch. */
function keepable(values: readonly string[], sensitive: readonly string[]): string[] {
  const out: string[] = [];
  for (const value of values) {
    if (out.length >= MAX_KEPT_VALUES) break;
    if (typeof value !== "string" || value.trim().length < MIN_SENSITIVE_LENGTH) continue;
    if (secretShaped(value)) continue;
    const lower = value.toLowerCase();
    if (sensitive.some((s) => lower.includes(s.toLowerCase()))) continue;
    out.push(value);
  }
  return out;
}

/** A value redaction would change for what it is, not for where it points. */
function secretShaped(value: string): boolean {
  if (value.includes("-----BEGIN ")) return true;
  for (const group of SECRET_GROUPS) {
    if (!group.may(value)) continue;
    for (const rule of group.rules) {
      if (rule[2](value) && applySecretRule(rule, value) !== value) return true;
    }
  }
  // A URL with credentials, a private host or a query string is redacted for what it holds.
  return value.includes("://") && redactLocations(value, false) !== value;
}
