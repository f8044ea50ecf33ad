/**
 * Redaction of model-facing text (docs/architecture.md §5): no stack frames, absolute paths, tokens and keys,
 * values named as credentials (`DB_PASS=…`, `AccountKey=…`, `--password …`, an `UPPER_NAME=` and
 * a token), credentials in URLs, connection strings, private IPs, internal host names, optionally
 * emails, and the values of arguments the policy marks sensitive.
 *
 * Work is bounded: the input is cut to the cap plus a margin, redacted, then the output is capped.
 * Every built-in pattern runs in linear time: each unbounded quantifier is a single character
 * class (never nested in another quantifier), and token patterns start with a look-behind that
 * excludes their own character class, so a run of look-alike characters is scanned once, not once
 * per position.
 */
import { replacePolicyPattern } from "../policy/policy-pattern.ts";
import {
  HEADER_HINT,
  PRIVATE_IPV6_HINT,
  VENDOR_PREFIX,
  VENDOR_TOKEN_HINT,
} from "./redact-hints.ts";
import { allowedListed, MAX_KEPT_VALUES, splitKept } from "./redact-keep.ts";
import { judgeFacts } from "./text-facts.ts";
import type { FactSlot } from "./text-memo.ts";

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
const MIN_SENSITIVE_LENGTH = 4;

const REDACTED = "[redacted]";
const TOKEN = "[token]";
const PATH = "[path]";
const URL_PLACEHOLDER = "[url]";
const IP = "[ip]";
const HOST = "[host]";
const EMAIL = "[email]";

/**
 * How many input characters {@link redact} reads for a given output cap: the cap plus a margin
 * of at least 2048 characters (or four times the cap), so text that redaction shrinks (dropped
 * stack frames, replaced paths) still fills the output.
 * @internal Exported for tests; not part of the public API.
 */
export function inputLimit(maxLength: number): number {
  return maxLength + Math.max(MIN_INPUT_MARGIN, maxLength * 4);
}

// ---------------------------------------------------------------------------------------------
// Input hygiene

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences start with ESC.
const ANSI_ESCAPE = /\u001B\[[0-?]*[ -/]*[@-~]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we remove.
const CONTROL_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;
// Invisible characters could split a secret so its pattern no longer matches: remove them. Soft
// hyphen, zero-width and bidirectional marks, embeddings and isolates, word joiners and invisible
// operators, the BOM, and what renders as nothing: the combining grapheme joiner, the Arabic letter
// mark, Hangul fillers, Khmer inherent vowels, Mongolian selectors, variation selectors and tags.
const INVISIBLE_MARKS = String.raw`\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\u{E0000}-\u{E007F}\u{E0100}-\u{E01EF}`;
const INVISIBLE_CHARS = new RegExp(`[${INVISIBLE_MARKS}]`, "gu");

/** Any character {@link sanitize} changes (an ANSI escape starts with a control character). */
const UNCLEAN = new RegExp(`[${CONTROL_CHARS.source.slice(1, -1)}${INVISIBLE_MARKS}]`, "u");

function sanitize(text: string): string {
  if (!UNCLEAN.test(text)) return text;
  return text.replace(ANSI_ESCAPE, "").replace(CONTROL_CHARS, " ").replace(INVISIBLE_CHARS, "");
}

/**
 * The whitespace that collapsing changes: a run of two characters or more (`\s{2,}` takes the
 * whole run), or one character other than a space. A run of one space is left as it is.
 */
const UNEVEN_SPACE = /\s{2,}|[^\S ]/g;

/**
 * Every run of whitespace as one space: `text.replace(/\s+/g, " ")`, without rewriting each single
 * space the text already has (most texts have nothing else; they come back as they are, in half
 * the time of the test that used to guard the replace). prefilter.test.ts checks the two agree.
 * @internal Exported for the normalizer and tests; not part of the public API.
 */
export function collapseSpaces(text: string): string {
  return text.replace(UNEVEN_SPACE, " ");
}

/**
 * `\s` of a JavaScript pattern, by UTF-16 code (NaN, outside the text, is not).
 * @internal For the judge's hand-written scans; not part of the public API.
 */
export function isWhitespace(code: number): boolean {
  return (
    code === 32 ||
    (code >= 9 && code <= 13) ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** Drops the last run of non-space characters: it may be the first half of a secret. */
function dropTrailingToken(text: string): string {
  let end = text.length;
  while (end > 0 && !isWhitespace(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}

/**
 * Each UTF-16 unit in lower case where that is one unit too, alone (no final sigma): the same
 * length, so what matches in the folded text matches at the same place in the text.
 */
function foldCase(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const unit = text.charAt(i);
    const folded = unit.toLowerCase();
    out += folded.length === 1 ? folded : unit;
  }
  return out;
}

/**
 * Length of the longest suffix of `text` that is a proper prefix of `value` (KMP: linear in the
 * text, whatever the value's length).
 */
function overlapWithPrefix(text: string, fullValue: string): number {
  // A prefix longer than the text cannot be its suffix; one extra character keeps it "proper".
  // Both in any case, as values are removed (`JANE D` is the start of `Jane Doe`).
  const value = foldCase(fullValue.slice(0, text.length + 1));
  const tail = foldCase(text.slice(Math.max(0, text.length - value.length + 1)));
  const failure = new Array<number>(value.length).fill(0);
  for (let i = 1, k = 0; i < value.length; i++) {
    while (k > 0 && value[i] !== value[k]) k = failure[k - 1] ?? 0;
    if (value[i] === value[k]) k++;
    failure[i] = k;
  }
  let k = 0;
  for (let i = 0; i < tail.length; i++) {
    const ch = tail[i];
    while (k > 0 && (k === value.length || ch !== value[k])) k = failure[k - 1] ?? 0;
    if (ch === value[k]) k++;
  }
  return k === value.length ? 0 : k;
}

// ---------------------------------------------------------------------------------------------
// Caller-supplied values and patterns

function sensitiveVariants(values: readonly string[] | undefined): string[] {
  if (values === undefined || values.length === 0) return [];
  const out = new Set<string>();
  for (const value of values) {
    if (typeof value !== "string" || value.length < MIN_SENSITIVE_LENGTH) continue;
    // A server may store and echo the value composed or decomposed (`é` or `e` and `́`).
    for (const form of new Set([value, value.normalize("NFC"), value.normalize("NFD")])) {
      out.add(form);
      // The text is sanitized before values are removed: a value holding an invisible mark or a
      // control character (an emoji's variation selector, a joiner) is also removed as it reads.
      const clean = sanitize(form);
      if (clean !== form && clean.trim().length >= MIN_SENSITIVE_LENGTH) out.add(clean);
      out.add(JSON.stringify(form).slice(1, -1));
      try {
        out.add(encodeURIComponent(form));
      } catch {
        // A lone surrogate has no URL encoding; the value itself is still removed.
      }
    }
  }
  // Longest first, so a value containing another is removed whole.
  return [...out]
    .filter((v) => v.length >= MIN_SENSITIVE_LENGTH)
    .sort((a, b) => b.length - a.length);
}

/** The characters a `u` pattern must escape to read them as themselves. */
const REGEXP_SYNTAX = /[\\^$.*+?()[\]{}|/]/g;

/**
 * Removes the values wherever they appear, in any case (a server that lowercases an email or a
 * user name, uppercases a code): each a literal matched without regard to case.
 */
function removeValues(text: string, values: readonly string[]): string {
  let out = text;
  for (const value of values) {
    out = out.replace(new RegExp(value.replace(REGEXP_SYNTAX, "\\$&"), "giu"), REDACTED);
  }
  return out;
}

function compilePattern(pattern: RegExp): RegExp {
  return new RegExp(
    pattern.source,
    pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`,
  );
}

function applyPatterns(text: string, patterns: readonly (string | RegExp)[] | undefined): string {
  if (patterns === undefined) return text;
  let out = text;
  for (const pattern of patterns) {
    // A policy's pattern (a string) runs on RE2, linear in the text: a server's long answer cannot
    // stall the loop whatever the pattern. An empty match must not insert a placeholder between
    // every character.
    out =
      typeof pattern === "string"
        ? replacePolicyPattern(pattern, out, REDACTED)
        : out.replace(compilePattern(pattern), (m) => (m === "" ? "" : REDACTED));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// PEM blocks and stack frames

/** A PEM block, or a BEGIN line with no END: everything to the end of the input. */
const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]{1,64}-----[\s\S]*?(?:-----END [A-Z0-9 ]{1,64}-----|$)/g;

/**
 * A location inside a stack frame: `file.js:1:2`, `node:net:1555:16`, `Bar.java:42`, `native`,
 * `<anonymous>`, `index 0`, `Native Method`, `Unknown Source`.
 */
function isFrameLocation(location: string): boolean {
  const loc = location.trim();
  if (
    loc === "native" ||
    loc === "Native Method" ||
    loc === "Unknown Source" ||
    loc.includes("<anonymous>") ||
    /^index \d+$/.test(loc)
  ) {
    return true;
  }
  return /:\d+$/.test(loc);
}

/**
 * `at callee (anything)`: a JS, Java or .NET frame whatever its location (`node:net:1555:16`,
 * `Native Method`, a .NET argument list), with `async`, `new`, `[as name]` and a .NET
 * `in file:line N` suffix. The callee is one token, so prose such as `at least one (of 3)` stays.
 */
const CALL_FRAME_LINE =
  /^\s*at\s+(?:async\s+)?(?:new\s+)?[^\s()]+(?:\s+\[as [^\]\n]*\])?\s*\([^\n]*\)(?:\s+in\s[^\n]*)?\s*$/;
/** `at callee (location)` with a callee of several words: the location must look like one. */
const JS_FRAME_LINE = /^\s*at\s(?:[^()\n]*\(([^\n]*)\)|\s*(?:async\s+)?(\S+))\s*$/;
const PY_FRAME_LINE = /^\s*File "[^"\n]*", line \d+/;
const TRACEBACK_LINE = /^\s*Traceback \(most recent call last\):?\s*$/;
const MORE_FRAMES_LINE = /^\s*\.\.\. \d+ more\s*$/;
/** .NET: the line between the frames of an awaited call. */
const DOTNET_END_LINE = /^\s*--- End of (?:inner exception )?stack trace[^\n]*---\s*$/;
/** Go: a goroutine header, and the `file.go:12 +0x1d` line under each function line. */
const GO_GOROUTINE_LINE = /^\s*goroutine \d+ \[[^\]\n]*\]:?\s*$/;
const GO_LOCATION_LINE = /^\s+\S+\.go:\d+(?: \+0x[0-9a-f]+)?\s*$/;
/** Go: the function line above a location line (`main.(*T).run(0xc0, 0x1)`, `created by main.main`). */
const GO_FUNCTION_LINE =
  /^\s*(?:[\w./*()$[\]{}-]+\([^\n]*\)|created by [^\s()]+(?:\([^\n]*\))?(?: in goroutine \d+)?)\s*$/;
/** Rust: `stack backtrace:` and `  12: std::rt::lang_start::{{closure}}`. */
const RUST_BACKTRACE_LINE = /^\s*stack backtrace:\s*$/;
const RUST_FRAME_LINE =
  /^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?:[\w$<>{}[\]&*. ]*::[^\n]*|_{1,2}\w+|rust_\w+)\s*$/;
// Frames that lost their line breaks (joined, or JSON-escaped `\n`).
const INLINE_FRAME =
  /(?<![\w$.])at\s{1,4}(?:async\s{1,4})?(?:new\s{1,4})?(?:[^\s()]{1,200}\s{0,4})?(?:\[as [^\]\n]{1,100}\]\s{0,4})?\(([^()\n]{1,1000})\)/g;
const INLINE_BARE_FRAME =
  /(?<![\w$.])at\s{1,4}(?:async\s{1,4})?((?:file:|node:|\/|[A-Za-z]:[\\/])[^\s()]{1,1000})/g;

function isFrameLine(line: string): boolean {
  if (CALL_FRAME_LINE.test(line)) return true;
  const m = JS_FRAME_LINE.exec(line);
  if (m === null) {
    return (
      TRACEBACK_LINE.test(line) ||
      MORE_FRAMES_LINE.test(line) ||
      DOTNET_END_LINE.test(line) ||
      GO_GOROUTINE_LINE.test(line) ||
      RUST_BACKTRACE_LINE.test(line) ||
      RUST_FRAME_LINE.test(line)
    );
  }
  const [, inParens, bare] = m;
  if (inParens !== undefined) return isFrameLocation(inParens);
  // `at file:///x.js:1:2`, `at /rustc/…/panicking.rs:645:5`, `at ./src/main.rs:4:5`.
  return (
    bare !== undefined &&
    (bare === "<anonymous>" ||
      /^(?:file:|node:|\/|\\\\|\.{1,2}[\\/]|[A-Za-z]:[\\/]).*:\d+$/.test(bare) ||
      /^[\w.-]+\.[A-Za-z]{1,6}:\d+(?::\d+)?$/.test(bare))
  );
}

function indentOf(line: string): number {
  let i = 0;
  while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
  return i;
}

/**
 * Whether a text may hold a stack frame: every frame line and inline frame has `at` after a
 * non-word character and before a space, or `File "`, `Traceback (` or `... `. Go and Rust
 * traces start with `goroutine N [` and `stack backtrace:`; a .NET `--- End of stack trace ---`
 * line sits between `at` frames. The same answer as the pattern
 * `/\bat\s|File "|Traceback \(|\.\.\. |goroutine |stack backtrace/` (prefilter.test.ts), read
 * without it: each literal with `includes`, then each
 * `at` that starts a word and has whitespace after it.
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldFrames(text: string): boolean {
  if (
    text.includes('File "') ||
    text.includes("Traceback (") ||
    text.includes("... ") ||
    text.includes("goroutine ") ||
    text.includes("stack backtrace")
  ) {
    return true;
  }
  for (let at = text.indexOf("at"); at >= 0; at = text.indexOf("at", at + 2)) {
    if (!isWordCode(text.charCodeAt(at - 1)) && isWhitespace(text.charCodeAt(at + 2))) return true;
  }
  return false;
}

/** `[A-Za-z0-9_]`, a character of `\w` (NaN, out of range, is not). */
function isWordCode(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95
  );
}

function dropStackFrames(text: string): string {
  if (!mayHoldFrames(text)) return text;
  const lines = text.split("\n");
  const kept: string[] = [];
  // After a Python `File "...", line N` frame, the next, deeper-indented line is its source code.
  let pythonIndent = -1;
  for (const line of lines) {
    if (pythonIndent >= 0) {
      const deeper = line.trim() !== "" && indentOf(line) > pythonIndent;
      pythonIndent = -1;
      if (deeper) continue;
    }
    if (PY_FRAME_LINE.test(line)) {
      pythonIndent = indentOf(line);
      continue;
    }
    if (GO_LOCATION_LINE.test(line)) {
      // The function line above it is part of the same frame.
      const previous = kept.at(-1);
      if (previous !== undefined && GO_FUNCTION_LINE.test(previous)) kept.pop();
      continue;
    }
    if (isFrameLine(line)) continue;
    kept.push(line);
  }
  return kept
    .join("\n")
    .replace(INLINE_FRAME, (m, location: string) => (isFrameLocation(location) ? "" : m))
    .replace(INLINE_BARE_FRAME, (m, location: string) => (/:\d+$/.test(location) ? "" : m));
}

// ---------------------------------------------------------------------------------------------
// Secrets: tokens, keys and key-value credentials

type Replacement = string | ((match: string, ...groups: unknown[]) => string);

/** Words a `token: …` style message carries that are a status, not a secret. */
const STATUS_WORDS =
  /^(?:expired|invalid|missing|required|revoked|malformed|empty|none|null|undefined|not|is|was|has|must|should|cannot|denied|rejected|unknown|bad|wrong|incorrect|too|mismatch|unset|present)$/i;

/**
 * A value made of placeholders, `…` (a capped output) and punctuation only: redacting it again
 * would change nothing but the punctuation.
 */
const PLACEHOLDERS = /\[(?:redacted|token|path|url|ip|host|email)\]|…/g;

function isInert(value: unknown): boolean {
  return typeof value === "string" && !/[A-Za-z0-9]/.test(value.replace(PLACEHOLDERS, ""));
}

function redactKeyValue(match: string, key: unknown, separator: unknown, value: unknown): string {
  if (typeof value !== "string" || isInert(value)) return match;
  // "token: expired", "token: invalid: expected 32 characters"
  const head = /^([A-Za-z]+)(?::\s|$)/.exec(value)?.[1];
  if (head !== undefined && STATUS_WORDS.test(head)) return match;
  // Keep the quotes, so text glued after a quoted value is not read as part of it next time.
  const opening = value.startsWith('"') || value.startsWith("'") ? value.charAt(0) : "";
  const last = value.charAt(value.length - 1);
  const closing = value.length > 1 && (last === '"' || last === "'") ? last : "";
  return `${String(key)}${String(separator)}${opening}${REDACTED}${closing}`;
}

function redactHeader(match: string, name: unknown, separator: unknown, value: unknown): string {
  if (isInert(value)) return match;
  return `${String(name)}${String(separator)}${TOKEN}`;
}

function redactBearer(match: string, word: unknown, space: unknown, value: unknown): string {
  // "bearer token", "Bearer authentication": a short plain word is prose, not a token.
  if (typeof value === "string" && /^[a-z]{1,15}$/i.test(value)) return match;
  return `${String(word)}${String(space)}${TOKEN}`;
}

/**
 * A long base64/alphanumeric run with mixed case and digits, or a long hex run of letters and
 * digits (an unlabelled hex key, an internal trace id): almost always a secret or an internal id.
 */
function redactHighEntropy(match: string): string {
  return isHighEntropy(match, 0, match.length) ? TOKEN : match;
}

/** Whether `text` from `start` to `end` reads as a token to {@link redactHighEntropy}. */
function isHighEntropy(text: string, start: number, end: number): boolean {
  let upper = 0;
  let lower = 0;
  let digit = 0;
  let hex = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 65 && c <= 90) upper++;
    else if (c >= 97 && c <= 122) lower++;
    else if (c >= 48 && c <= 57) digit++;
    if ((c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)) hex++;
  }
  if (upper >= 2 && lower >= 2 && digit >= 2) return true;
  const letters = upper + lower;
  return hex === end - start && letters >= 4 && digit >= 4 && (upper === 0 || lower === 0);
}

/** A 40-character base64 run with `/` or `+` and mixed case: an AWS secret key. */
function redactAwsSecret(match: string): string {
  if (!match.includes("/") && !match.includes("+")) return match;
  if (match.startsWith("/")) return match; // a path, read as a location later
  let upper = 0;
  let lower = 0;
  for (let i = 0; i < match.length; i++) {
    const c = match.charCodeAt(i);
    if (c >= 65 && c <= 90) upper++;
    else if (c >= 97 && c <= 122) lower++;
  }
  return upper >= 4 && lower >= 4 ? TOKEN : match;
}

/** Schemes of connection strings: redacted whole, they name hosts, users and databases. */
const CONNECTION_SCHEMES = new Set([
  "postgres",
  "postgresql",
  "mysql",
  "mysqlx",
  "mariadb",
  "mongodb",
  "mongodb+srv",
  "redis",
  "rediss",
  "amqp",
  "amqps",
  "mssql",
  "sqlserver",
  "clickhouse",
  "cockroachdb",
  "memcached",
  "kafka",
  "nats",
  "ldap",
  "ldaps",
  "smtp",
  "smtps",
  "ftp",
  "sftp",
]);

/** Splits trailing sentence punctuation off a match, so `see /a/b.` keeps its period. */
function splitTrailing(match: string): [string, string] {
  let end = match.length;
  while (end > 0 && ".:!?".includes(match.charAt(end - 1))) end--;
  return [match.slice(0, end), match.slice(end)];
}

/** user:pass@host, token@host, or a password with an unencoded `/` (what follows `://`, no query). */
function hasCredentials(rest: string): boolean {
  const slash = rest.indexOf("/");
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const at = rest.indexOf("@");
  return authority.includes("@") || (at >= 0 && rest.slice(0, at).includes(":"));
}

/**
 * Runs before any other secret rule, so a key-value rule cannot eat half of `user:pwd@host`:
 * connection strings and URLs with credentials become `[url]`; other URLs lose their query
 * string and fragment (tokens hide there).
 */
function screenUrl(match: string, base: unknown, query: unknown): string {
  const url = String(base);
  const sep = url.indexOf("://");
  const [, trailing] = splitTrailing(match);
  if (
    CONNECTION_SCHEMES.has(url.slice(0, sep).toLowerCase()) ||
    hasCredentials(url.slice(sep + 3))
  ) {
    return URL_PLACEHOLDER + trailing;
  }
  return typeof query === "string" ? url + trailing : match;
}

/** A URL's scheme ends at most 31 characters after its start, where `://` follows. */
const SCHEME_REACH = 31;

/**
 * The leftmost match at `from` or after of a global pattern every match of which holds `anchor`
 * at most `reach` characters after its start: the search starts near the first anchor, not at
 * `from` (a pattern that reads every position of a long text is slow even when it fails).
 */
function nextAnchored(
  text: string,
  pattern: RegExp,
  anchor: string,
  reach: number,
  from: number,
): RegExpExecArray | null {
  const at = text.indexOf(anchor, from);
  if (at < 0) return null;
  pattern.lastIndex = Math.max(from, at - reach);
  const match = pattern.exec(text);
  pattern.lastIndex = 0;
  return match;
}

/**
 * `text.replace(pattern, replace)` for a global pattern without named groups every match of which
 * holds `anchor` at most `reach` characters after its start: the same result, but each search
 * starts near the next anchor instead of reading every position before it.
 * @internal Exported for the normalizer; not part of the public API.
 */
export function replaceAnchored<A extends unknown[]>(
  text: string,
  pattern: RegExp,
  anchor: string,
  reach: number,
  replace: (match: string, ...args: A) => string,
): string {
  let out = "";
  // Text before `copied` is in `out`; the next match starts at `from` or after.
  let copied = 0;
  let from = 0;
  while (from <= text.length) {
    const match = nextAnchored(text, pattern, anchor, reach, from);
    if (match === null) break;
    const start = match.index;
    const whole = match[0];
    const args = match.slice(1) as unknown[];
    args.push(start, text);
    out += text.slice(copied, start) + replace(whole, ...(args as A));
    copied = start + whole.length;
    // After an empty match the search moves on by one, as the builtin does.
    from = whole === "" ? copied + 1 : copied;
  }
  return copied === 0 && out === "" ? text : out + text.slice(copied);
}

/** What ends every key of a key-value credential (a session id ends in `id`), lowercase. */
const CREDENTIAL_KEY_ENDS = [
  "key",
  "secret",
  "token",
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "credential",
  "credentials",
  "id",
  "signature",
  "sig",
];

/**
 * Whether a word of {@link CREDENTIAL_KEY_ENDS}, a quote at most and whitespace come before a `:`
 * or `=`, in either case of ASCII letters: from each `:` and `=` back. The same answer as the
 * pattern `/(?:key|secret|…|sig)["']?\s*[:=]/i` (prefilter.test.ts).
 * @internal Exported for tests; not part of the public API.
 */
export function hasCredentialKey(text: string): boolean {
  for (let at = text.indexOf(":"); at >= 0; at = text.indexOf(":", at + 1)) {
    if (credentialKeyBefore(text, at)) return true;
  }
  for (let at = text.indexOf("="); at >= 0; at = text.indexOf("=", at + 1)) {
    if (credentialKeyBefore(text, at)) return true;
  }
  return false;
}

function credentialKeyBefore(text: string, separator: number): boolean {
  let end = separator;
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  const quote = text.charCodeAt(end - 1);
  if (quote === 34 || quote === 39) end--;
  for (const word of CREDENTIAL_KEY_ENDS) {
    const start = end - word.length;
    if (start < 0) continue;
    let i = 0;
    // `| 0x20` folds an ASCII capital to its small letter and keeps every other code off a-z.
    while (i < word.length && (text.charCodeAt(start + i) | 0x20) === word.charCodeAt(i)) i++;
    if (i === word.length) return true;
  }
  return false;
}

/** Every URL and connection string has one. */
function hasScheme(text: string): boolean {
  return text.includes("://");
}

/**
 * A set of ASCII characters, as a table by code (1: in the set).
 * @internal Exported for the normalizer; not part of the public API.
 */
export function charTable(chars: string): Uint8Array {
  const table = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) table[chars.charCodeAt(i)] = 1;
  return table;
}

/**
 * Whether the text has a run of `length` characters or more of a set (see {@link charTable}) that
 * passes `accept` (given the text, the run's start and its end). Such a run covers a position `length - 1`
 * modulo `length`: only those are read, then widened to the whole run.
 * @internal Exported for the normalizer; not part of the public API.
 */
export function hasRun(
  text: string,
  set: Uint8Array,
  length: number,
  accept?: (text: string, start: number, end: number) => boolean,
): boolean {
  const n = text.length;
  // Runs widened so far end before `widened`.
  let widened = 0;
  for (let probe = length - 1; probe < n; probe += length) {
    if (probe < widened) continue;
    const code = text.charCodeAt(probe);
    if (code >= 128 || set[code] !== 1) continue;
    let start = probe;
    while (start > 0) {
      const c = text.charCodeAt(start - 1);
      if (c >= 128 || set[c] !== 1) break;
      start--;
    }
    let end = probe + 1;
    while (end < n) {
      const c = text.charCodeAt(end);
      if (c >= 128 || set[c] !== 1) break;
      end++;
    }
    widened = end;
    if (end - start >= length && (accept === undefined || accept(text, start, end))) return true;
  }
  return false;
}

/** `[A-Za-z0-9+_-]`, the characters of a long key. */
const KEY_CHARS = charTable("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+_-");

/**
 * Whether the rule of long keys would change the text: every match of its pattern is a whole run
 * of 32 or more characters of a long key and the `=` (at most two) after it, so the rule changes
 * the text exactly when such a run reads as a token to {@link redactHighEntropy}.
 */
function hasKeyRun(text: string): boolean {
  return hasRun(text, KEY_CHARS, 32, isEntropyRun);
}

function isEntropyRun(text: string, start: number, end: number): boolean {
  let stop = end;
  while (stop < end + 2 && text.charCodeAt(stop) === 61) stop++; // "="
  return isHighEntropy(text, start, stop);
}

/** `[A-Za-z0-9+/]`, the characters of an AWS secret access key. */
const AWS_SECRET_CHARS = charTable(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
);
/** `[=_.-]`: with {@link AWS_SECRET_CHARS}, what may not touch an AWS secret access key. */
const AWS_SECRET_EDGE = charTable("=_.-");

/**
 * Whether the rule of AWS secret access keys would change the text: every match of its pattern is
 * a whole run of exactly 40 of their characters, touching none of `=_.-`, that
 * {@link redactAwsSecret} replaces.
 */
function hasAwsSecretRun(text: string): boolean {
  return (text.includes("/") || text.includes("+")) && hasRun(text, AWS_SECRET_CHARS, 40, isAwsRun);
}

function isAwsRun(text: string, start: number, end: number): boolean {
  if (end - start !== 40) return false;
  const before = text.charCodeAt(start - 1);
  const after = text.charCodeAt(end);
  if (
    (before < 128 && AWS_SECRET_EDGE[before] === 1) ||
    (after < 128 && AWS_SECRET_EDGE[after] === 1)
  ) {
    return false;
  }
  const match = text.slice(start, end);
  return redactAwsSecret(match) !== match;
}

// ---------------------------------------------------------------------------------------------
// Values named as credentials: `DB_PASS=…`, `AccountKey=…`, `--password …`, `API_TOKEN_2=…`

/** The value of a key-value credential: quoted, a value that swallowed the next `key:`, or plain. */
const KEY_VALUE_SRC = String.raw`"[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>]*[:=]\s*(?:"[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>]+)|[^\s"'<>]+`;
/** {@link KEY_VALUE_SRC} read where the value starts (after the separator and its spaces). */
const KEY_VALUE_AT = new RegExp(KEY_VALUE_SRC, "y");

/** Words that make a name a credential's (`DB_PASS`, `MYSQL_PWD`, `userPassword`). */
const STRONG_NAME_WORDS = new Set([
  "pass",
  "passwd",
  "password",
  "passphrase",
  "pwd",
  "pw",
  "secret",
  "secrets",
  "token",
  "cred",
  "creds",
  "credential",
  "credentials",
  "apikey",
  "privatekey",
]);
/** Strong words glued to a prefix: `PGPASSWORD`, `clientsecret`, `accesstoken`. */
const STRONG_NAME_END = /(?:password|passwd|passphrase|secret|token|apikey|credentials?)$/;
/**
 * Words that make a name a credential's when its value looks like a token: `AccountKey`,
 * `SharedAccessKey`, `SERVICE_KEY_B`, but not `sort_key=name` or `auth=none`.
 */
const WEAK_NAME_WORDS = new Set([
  "key",
  "keys",
  "auth",
  "sig",
  "signature",
  "session",
  "sid",
  "salt",
  "private",
  "cookie",
  "jwt",
  "bearer",
  "otp",
  "pin",
  "sas",
]);

/** Something every strong or weak word holds: most names are told apart by this alone. */
const CREDENTIAL_STEM =
  /pass|pw|secret|token|cred|key|auth|sig|session|sid|salt|private|cookie|jwt|bearer|otp|pin|sas/i;

/** How a name marks its value: any value, a token-shaped value, or nothing. */
type NameKind = "any" | "tokenish" | undefined;

/**
 * Words of a name, lowercased: `DB_PASS` → db, pass; `AccountKey` → account, key (a flag's
 * words are split at `-` and `_` only: `-pS3cret` is a password glued to `-p`, not words).
 */
function nameWords(name: string, camel: boolean): string[] {
  const split = camel
    ? name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    : name;
  return split
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== "");
}

/**
 * Whether a name marks a credential. A strong word last (`DB_PASS`, `PGPASSWORD`, `TOKEN_2`: a
 * trailing number or letter does not count) marks any value; a strong word elsewhere
 * (`MY_APP_CREDENTIAL_X`, but also `token_count`) or a weak word (`AccountKey`) only a value that
 * looks like a token, so `token_count=5` and `sort_key=name` stay.
 */
function credentialName(name: string, camel = true): NameKind {
  if (!CREDENTIAL_STEM.test(name)) return undefined;
  const words = nameWords(name, camel);
  let last = words.length - 1;
  while (last > 0 && /^(?:\d+|[a-z])$/.test(words[last] ?? "")) last--;
  let kind: NameKind;
  for (const [i, word] of words.entries()) {
    const strong = STRONG_NAME_WORDS.has(word) || STRONG_NAME_END.test(word);
    if (strong && i === last) return "any";
    if (strong || WEAK_NAME_WORDS.has(word)) kind = "tokenish";
  }
  return kind;
}

/** The characters of a token-shaped value. */
const TOKEN_CHARS = charTable(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_.~-",
);

/** How far {@link looksLikeToken} reads: enough to tell a token from a word, and bounded. */
const TOKEN_PROBE = 64;

/**
 * Whether the text at `from` starts with a token: `minLength` token characters or more, with
 * letters and digits among the first 64 (`hunter22`, a base64 key), not a word or a number
 * (`created_at`, `5`). An opening quote is skipped.
 */
function looksLikeToken(text: string, from: number, minLength: number): boolean {
  const start = text[from] === '"' || text[from] === "'" ? from + 1 : from;
  const limit = Math.min(text.length, start + TOKEN_PROBE);
  let letters = 0;
  let digits = 0;
  let end = start;
  for (; end < limit; end++) {
    const c = text.charCodeAt(end);
    if (c >= 128 || TOKEN_CHARS[c] !== 1) break;
    if (c >= 48 && c <= 57) digits++;
    else if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) letters++;
  }
  return end - start >= minLength && letters >= 2 && digits >= 1;
}

/** An environment variable's name: `STRIPE_WEBHOOK`, `X1`. */
const ENV_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;
/** A token-shaped value after an environment variable's name: long enough to be a key. */
const ENV_TOKEN_LENGTH = 16;
/** A token-shaped value after a weakly named key (`AccountKey`): long enough not to be a word. */
const WEAK_TOKEN_LENGTH = 8;

function isNameChar(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 ||
    code === 45 ||
    code === 46
  );
}

const MAX_NAME_LENGTH = 64;

/**
 * The name before a separator at `at`: spaces, an optional quote, then up to 64 characters of
 * `[\w.-]` that nothing of that class precedes. Undefined when there is none.
 */
function nameBefore(
  text: string,
  at: number,
): { start: number; end: number; name: string } | undefined {
  let end = at;
  while (end > 0 && at - end < 8 && (text[end - 1] === " " || text[end - 1] === "\t")) end--;
  if (end > 0 && (text[end - 1] === '"' || text[end - 1] === "'")) end--;
  let start = end;
  while (start > 0 && end - start <= MAX_NAME_LENGTH && isNameChar(text.charCodeAt(start - 1))) {
    start--;
  }
  if (start === end || end - start > MAX_NAME_LENGTH) return undefined;
  const name = text.slice(start, end);
  if (!/[A-Za-z]/.test(name)) return undefined;
  const quoted = start > 0 && (text[start - 1] === '"' || text[start - 1] === "'");
  return { start: quoted ? start - 1 : start, end, name };
}

/**
 * Redacts the value after each `name=` / `name:` whose name marks a credential (see
 * {@link credentialName}), and after each `ENV_NAME=` whose value looks like a token of 16
 * characters or more (`STRIPE_WEBHOOK=whsec…`), whatever the name. Separators are visited in
 * order; a redacted value is skipped whole, a kept one is read again (it may hold `DB_PASS=…`).
 */
function redactNamedValues(text: string): string {
  let out = "";
  let copied = 0;
  const separators = new Separators(text);
  for (let at = separators.next(0); at >= 0; at = separators.next(at + 1)) {
    const c = text.charCodeAt(at);
    const named = nameBefore(text, at);
    if (named === undefined || named.start < copied) continue;
    const { name } = named;
    const kind = credentialName(name);
    // `NAME=value`, the name glued to `=`: an environment variable.
    const env = kind === undefined && c === 61 && named.end === at && ENV_NAME.test(name);
    if (kind === undefined && !env) continue;
    let valueAt = at + 1;
    while (valueAt < text.length && isWhitespace(text.charCodeAt(valueAt))) valueAt++;
    // Bounded: a value kept here is read again from its next separator.
    if (env && !looksLikeToken(text, valueAt, ENV_TOKEN_LENGTH)) continue;
    if (kind === "tokenish" && !looksLikeToken(text, valueAt, WEAK_TOKEN_LENGTH)) continue;
    KEY_VALUE_AT.lastIndex = valueAt;
    const value = KEY_VALUE_AT.exec(text)?.[0];
    if (value === undefined) continue;
    const key = text.slice(named.start, at);
    const separator = text.slice(at, valueAt);
    const whole = key + separator + value;
    const replaced = redactKeyValue(whole, key, separator, value);
    if (replaced === whole) continue;
    out += text.slice(copied, named.start) + replaced;
    copied = valueAt + value.length;
    at = copied - 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * The `=` and `:` of a text in order, each found once: the next of each kind is kept until passed
 * (searching again for a kind the text lacks would read the rest of the text every time).
 */
class Separators {
  private eq = -2;
  private colon = -2;
  constructor(private readonly text: string) {}

  /** The first `=` or `:` at `from` or after, or -1. */
  next(from: number): number {
    if (this.eq !== -1 && this.eq < from) this.eq = this.text.indexOf("=", from);
    if (this.colon !== -1 && this.colon < from) this.colon = this.text.indexOf(":", from);
    if (this.eq < 0) return this.colon;
    return this.colon < 0 || this.eq < this.colon ? this.eq : this.colon;
  }
}

/** `--password hunter2`, `-token abc`: a flag named as a credential, then its value after spaces. */
/**
 * Whether a command-line flag may be there: a `-` that no word character or `-` comes before, then a
 * letter, or `-` and a letter; where every match of the flag rule starts. Most error texts hold
 * none (the `-` of an id or a word comes after a letter or digit): one search for `-` instead of
 * the rule's pattern, half the time (prefilter.test.ts checks the rule then changes nothing).
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldFlag(text: string): boolean {
  for (let at = text.indexOf("-"); at >= 0; at = text.indexOf("-", at + 1)) {
    if (at > 0) {
      const before = text.charCodeAt(at - 1);
      if (before === 45 || isWordCode(before)) continue;
    }
    if (at + 1 >= text.length) return false;
    const next = text.charCodeAt(at + 1);
    if (isAsciiLetter(next)) return true;
    if (next === 45 && at + 2 < text.length && isAsciiLetter(text.charCodeAt(at + 2))) return true;
  }
  return false;
}

function isAsciiLetter(code: number): boolean {
  const lower = code | 0x20;
  return lower >= 97 && lower <= 122;
}

function redactFlagValue(match: string, flag: unknown, space: unknown, value: unknown): string {
  if (typeof flag !== "string" || typeof value !== "string") return match;
  const kind = credentialName(flag, false);
  // Prose names a flag too: "pass the --access-token flag", "--password or a key file".
  if (kind === undefined || /^[A-Za-z]{1,12}[.,;:!?)]?$/.test(value)) return match;
  if (kind === "tokenish" && !looksLikeToken(value, 0, WEAK_TOKEN_LENGTH)) return match;
  return redactKeyValue(match, flag, space, value);
}

/** `curl -u user:pw`, `--user "user:pw"`: the password goes, the user stays. */
function redactUserPassword(
  match: string,
  flag: unknown,
  separator: unknown,
  ...groups: unknown[]
): string {
  // Double-quoted, single-quoted, then bare: user and password of the form that matched.
  const form = [0, 2, 4].find((i) => groups[i] !== undefined) ?? 4;
  const user = String(groups[form]);
  const password = String(groups[form + 1]);
  if (isInert(password)) return match;
  const quote = form === 0 ? '"' : form === 2 ? "'" : "";
  const close = quote !== "" && match.endsWith(quote) ? quote : "";
  return `${String(flag)}${String(separator)}${quote}${user}:${REDACTED}${close}`;
}

/** `-pS3cret`: a password glued to `-p`, as the MySQL and MariaDB clients take it. */
const GLUED_PASSWORD = /(?<![\w-])-p([^\s"'<>=-][^\s"'<>]*)/g;

/**
 * `mysql -pS3cret`, `mysqldump -uroot -pS3cret`: in a text that names a MySQL or MariaDB tool,
 * every value glued to `-p` (elsewhere `-p` is often a port: `-p8080`).
 */
function redactGluedPasswords(text: string): string {
  if (!/mysql|mariadb/i.test(text)) return text;
  return text.replace(GLUED_PASSWORD, (match, value: string) =>
    isInert(value) ? match : `-p${REDACTED}`,
  );
}

/** The characters of a key of {@link VENDOR_KEY}. */
const VENDOR_KEY_CHARS = charTable(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.-",
);
/**
 * Groq, Linear, Notion, Shopify, Grafana, Vercel, Docker, Figma, Cloudflare, 1Password, HashiCorp
 * Vault, SendGrid, Databricks and Tailscale keys.
 */
function hasVendorPrefix(text: string, start: number, end: number): boolean {
  return VENDOR_PREFIX.test(text.slice(start, end));
}
const VENDOR_KEY =
  /(?<![\w-])(?:(?:gsk|lin_api|ntn|shppa|shpca|shpat|shpss|glc|glsa|vc[piark]|dckr_pat|figd|cfk|cfut|cfat|ops)_[A-Za-z0-9_+/=-]{16,}|hv[sbr]\.[A-Za-z0-9_-]{16,}|SG\.[\w-]{8,}\.[\w-]{8,}|dapi[a-fA-F0-9]{32}|tskey-[a-z]{2,20}-[A-Za-z0-9_]{4,}-[A-Za-z0-9_]{8,})/g;

/** A rule that rewrites the whole text itself, rather than through `String.prototype.replace`. */
interface Rewrite {
  readonly rewrite: (text: string) => string;
}

/**
 * A secret rule: a pattern, its replacement, and a cheap test that the text holds something every
 * change the rule makes needs (when it fails, the pattern is not run: the same result, sooner).
 * @internal Exported for tests; not part of the public API.
 */
export type SecretRule = readonly [
  /** The pattern (for a {@link Rewrite}, the one it reads values with). */
  pattern: RegExp,
  replacement: Replacement | Rewrite,
  may: (text: string) => boolean,
  /** Every match holds this string at most this many characters after its start. */
  anchor?: readonly [anchor: string, reach: number],
];

/**
 * The secret rules, in order, in groups whose test holds whenever the test of one of their rules
 * does: when it fails, the whole group is skipped.
 * @internal Exported for tests; not part of the public API.
 */
export const SECRET_GROUPS: readonly {
  readonly may: (text: string) => boolean;
  readonly rules: readonly SecretRule[];
}[] = [
  {
    may: hasScheme,
    rules: [
      [
        /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^\s"'`<>()[\]{}|\\^,;?#]*)([?#][^\s"'`<>()[\]{}|\\^,;]*)?/g,
        screenUrl,
        hasScheme,
        ["://", SCHEME_REACH],
      ],
      // Webhook URLs carry their secret in the path.
      [/(?<![\w.-])https?:\/\/hooks\.slack\.com\/[^\s"'`<>]*/gi, URL_PLACEHOLDER, hasScheme],
      [
        /(?<![\w.-])https?:\/\/(?:[\w-]{1,30}\.)?discord(?:app)?\.com\/api\/webhooks\/[^\s"'`<>]*/gi,
        URL_PLACEHOLDER,
        hasScheme,
      ],
    ],
  },
  {
    may: (text) => HEADER_HINT.test(text),
    rules: [
      // Headers whose value is a credential.
      [
        /(?<![\w-])((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|x-access-token)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?([^\s"',;()]*[:=]\s*[^\s"',;()]+|[^\s"',;()]+)/gi,
        redactHeader,
        (text) => /authorization|api-key|-auth-token|-access-token/i.test(text),
      ],
      [
        /(?<![\w-])(set-cookie|cookie)(\s*:\s*)[^\r\n]*/gi,
        `$1$2${REDACTED}`,
        (text) => /cookie/i.test(text),
      ],
      [
        /(?<![\w-])(bearer)(\s+)([A-Za-z0-9\-._~+/]+=*)/gi,
        redactBearer,
        (text) => /bearer/i.test(text),
      ],
    ],
  },
  {
    may: (text) => VENDOR_TOKEN_HINT.test(text),
    rules: [
      // Vendor key formats.
      [/(?<![\w-])sk-[A-Za-z0-9_-]{16,}/g, TOKEN, (text) => text.includes("sk-")],
      [
        /(?<![\w-])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/g,
        TOKEN,
        (text) => /_(?:live|test)_/.test(text),
      ],
      [/(?<![\w-])whsec_[A-Za-z0-9+/=]{16,}/g, TOKEN, (text) => text.includes("whsec_")],
      // Classic tokens (36 characters, `_` among them), and GitHub App installation tokens,
      // `ghs_<id>_<jwt>`.
      [
        /(?<![\w-])(?:gh[pousr]_(?:[A-Za-z0-9_]{36}(?![A-Za-z0-9_])|[A-Za-z0-9]{20,})|ghs_\d{1,20}_[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]{8,})/g,
        TOKEN,
        (text) => /gh[pousr]_/.test(text),
      ],
      [/(?<![\w-])github_pat_[A-Za-z0-9_]{20,}/g, TOKEN, (text) => text.includes("github_pat_")],
      [
        /(?<![\w-])(?:xox[abprseco]|xapp)-[A-Za-z0-9-]{8,}/g,
        TOKEN,
        (text) => /xox[abprseco]-|xapp-/.test(text),
      ],
      [
        /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])/g,
        TOKEN,
        (text) => /A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA|3T)/.test(text),
      ],
      [/(?<![\w-])AIza[A-Za-z0-9_-]{30,}/g, TOKEN, (text) => text.includes("AIza")],
      [
        /(?<![\w-])(?:npm|hf|glpat|pypi)[_-][A-Za-z0-9_-]{20,}/g,
        TOKEN,
        (text) => /(?:npm|hf|glpat|pypi)[_-]/.test(text),
      ],
      // JWT: header.payload.signature, base64url, header starting `{"`.
      [
        /(?<![\w-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g,
        TOKEN,
        (text) => text.includes("eyJ"),
      ],
    ],
  },
  {
    // Every key of these formats is a run of 20 characters or more of `[A-Za-z0-9_+/=.-]` that
    // holds its prefix. Most texts hold no prefix at all: that is read first.
    may: (text) => VENDOR_PREFIX.test(text) && hasRun(text, VENDOR_KEY_CHARS, 20, hasVendorPrefix),
    rules: [
      // Other vendors' formats (Groq, Linear, Notion, Shopify, Grafana, Vercel, Docker, Figma,
      // Cloudflare, 1Password, HashiCorp Vault, SendGrid, Databricks, Tailscale).
      [VENDOR_KEY, TOKEN, () => true],
    ],
  },
  {
    may: () => true,
    rules: [
      // `mysql -pS3cret`: before key=value, whose value can swallow the word that names MySQL
      // (`api_key=x)(mysql -p…`) and with it the reason to read `-p` as a password.
      [GLUED_PASSWORD, { rewrite: redactGluedPasswords }, (text) => text.includes("-p")],
      // key=value / key: value / "key": "value" credentials (aws_secret_access_key, password, …).
      // A value that swallowed the next `key:` (`pw=a)(api_key: b`) takes that key's value too.
      [
        /(?<![\w-])(["']?[\w.-]{0,40}?(?:api[_-]?key|apikey|(?:access|secret|private|signing|encryption|master|client)[_-]?key|client[_-]?secret|secret|token|password|passwd|pwd|passphrase|credentials?|session[_-]?id|sessionid|signature|sig)["']?)(\s*[:=]\s*)("[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>]*[:=]\s*(?:"[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>]+)|[^\s"'<>]+)/gi,
        redactKeyValue,
        // The end of every key, then its separator.
        hasCredentialKey,
      ],
      // Command lines: `--password hunter2`, `curl -u user:pw`, `mysql -pS3cret`.
      [
        /(?<![\w-])(--?[A-Za-z][\w-]{0,40})(\s+)("[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>-][^\s"'<>]*)/g,
        redactFlagValue,
        mayHoldFlag,
      ],
      [
        /(?<![\w-])(-u|-U|--user|--proxy-user)(\s+|=)(?:"([^"\r\n:]+):([^"\r\n]*)"?|'([^'\r\n:]+):([^'\r\n]*)'?|([^\s:"'<>]+):([^\s"'<>]+))/g,
        redactUserPassword,
        (text) => text.includes("-u") || text.includes("-U"),
      ],
      // `DB_PASS=…`, `AccountKey=…`, `STRIPE_WEBHOOK=<token>`.
      [
        KEY_VALUE_AT,
        { rewrite: redactNamedValues },
        (text) => text.includes("=") || text.includes(":"),
      ],
      // A private key or hash as `0x` and hex.
      [/(?<![\w])0x[0-9a-fA-F]{32,}/g, TOKEN, (text) => text.includes("0x")],
      // After `=` too: `NAME=<key>` whatever the name.
      [/(?<![A-Za-z0-9+_-])[A-Za-z0-9+_-]{32,}={0,2}/g, redactHighEntropy, hasKeyRun],
      // An AWS secret access key without its label: exactly 40 base64 characters with a `/` or
      // `+` in them (the rule above stops at `/`), mixed case and digits.
      [
        /(?<![A-Za-z0-9+/=_.-])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=_.-])/g,
        redactAwsSecret,
        hasAwsSecretRun,
      ],
    ],
  },
];

const SECRET_RULES: readonly SecretRule[] = SECRET_GROUPS.flatMap((group) => group.rules);

/**
 * What a secret rule makes of a text (its test aside).
 * @internal Exported for tests; not part of the public API.
 */
export function applySecretRule(rule: SecretRule, text: string): string {
  const [pattern, replacement, , anchor] = rule;
  if (typeof replacement === "string") return text.replace(pattern, replacement);
  if (typeof replacement !== "function") return replacement.rewrite(text);
  if (anchor === undefined) return text.replace(pattern, replacement);
  return replaceAnchored(text, pattern, anchor[0], anchor[1], replacement);
}

// ---------------------------------------------------------------------------------------------
// Locations: URLs, emails, paths, private IPs, internal hosts (one pass, leftmost match wins, so
// the path of a kept URL is not read again as a file path)

const URL_SRC = String.raw`(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^\s"'\x60<>()\[\]{}|\\^,;]*`;
const EMAIL_SRC = String.raw`(?<![\w.+%-])[\w.+%-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]*[A-Za-z0-9]`;
const UNC_SRC = String.raw`(?<![\w\\])\\{2,4}[^\s\\"'\x60<>|?*()\[\]{},;]+\\[^\s"'\x60<>|?*()\[\]{},;]*`;
const WINDOWS_PATH_SRC = String.raw`(?<![\w\\/])[A-Za-z]:[\\/][^\s"'\x60<>|?*()\[\]{},;]*`;
const POSIX_PATH_SRC = String.raw`(?<![\w.~:/\\-])~?\/[^\s/"'\x60<>()\[\]{}|,;]+\/[^\s"'\x60<>()\[\]{}|,;]*`;
const PRIVATE_IPV4_SRC = String.raw`(?<![\w.])(?:10\.\d{1,3}|127\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01])|192\.168|169\.254)\.\d{1,3}\.\d{1,3}(?!\d|\.\d)`;
const PRIVATE_IPV6_SRC = String.raw`(?<![\w:])(?:::1|f[cd][0-9a-f]{2}:[0-9a-f]{0,4}:[0-9a-f:]{0,36}|fe[89ab][0-9a-f]:[0-9a-f]{0,4}:[0-9a-f:]{0,36})(?![\w:])`;
const INTERNAL_HOST_SRC = String.raw`(?<![\w.-])[A-Za-z0-9][A-Za-z0-9.-]{0,250}?\.(?:internal|local|localdomain|corp|lan|intranet|home\.arpa)(?![\w-]|\.[\w-])`;

/**
 * The kinds of locations, in the order of the pattern that reads them all (leftmost match first,
 * then the first kind), each with a cheap test of something every match of it holds: a kind whose
 * test fails cannot match anywhere in the text, so leaving it out of the pattern changes nothing.
 */
const LOCATION_KINDS: readonly {
  readonly source: string;
  readonly may: (text: string) => boolean;
}[] = [
  { source: URL_SRC, may: hasScheme },
  { source: EMAIL_SRC, may: (text) => text.includes("@") },
  { source: UNC_SRC, may: (text) => text.includes("\\\\") },
  { source: WINDOWS_PATH_SRC, may: (text) => text.includes(":\\") || text.includes(":/") },
  // Two slashes.
  { source: POSIX_PATH_SRC, may: (text) => text.indexOf("/") !== text.lastIndexOf("/") },
  { source: PRIVATE_IPV4_SRC, may: (text) => /\d\.\d/.test(text) },
  { source: PRIVATE_IPV6_SRC, may: (text) => PRIVATE_IPV6_HINT.test(text) },
  {
    source: INTERNAL_HOST_SRC,
    may: (text) => /\.(?:internal|local|corp|lan|intranet|home\.arpa)/i.test(text),
  },
];
const URL_KIND = 0;
const EMAIL_KIND = 1;
const LAST_PATH_KIND = 4;
const LAST_IP_KIND = 6;

/** One pattern for the kinds of a mask, one group each; `kinds[i]` is the kind of group `i + 1`. */
interface LocationPattern {
  readonly pattern: RegExp;
  readonly kinds: readonly number[];
}

function locationPattern(mask: number): LocationPattern {
  const kinds = LOCATION_KINDS.flatMap((_, kind) => (mask & (1 << kind) ? [kind] : []));
  const source = kinds.map((kind) => `(${LOCATION_KINDS[kind]?.source})`).join("|");
  return { pattern: new RegExp(source, "gi"), kinds };
}

/** Patterns by mask of kinds, made when first needed (at most one per subset of kinds). */
const LOCATIONS_BY_MASK = new Map<number, LocationPattern>();

function cachedLocationPattern(mask: number): LocationPattern {
  let pattern = LOCATIONS_BY_MASK.get(mask);
  if (pattern === undefined) {
    pattern = locationPattern(mask);
    LOCATIONS_BY_MASK.set(mask, pattern);
  }
  return pattern;
}

/**
 * Every kind of location in one pattern, as {@link redactLocations} reads them.
 * @internal Exported for tests; not part of the public API.
 */
export const LOCATIONS_WITH_EMAILS = locationPattern((1 << LOCATION_KINDS.length) - 1).pattern;
/** URLs alone. */
const URL_ALONE = new RegExp(URL_SRC, "gi");

const PRIVATE_IPV4 = new RegExp(`^${PRIVATE_IPV4_SRC}$`);
const PRIVATE_IPV6 = new RegExp(`^${PRIVATE_IPV6_SRC}$`, "i");
const INTERNAL_HOST = new RegExp(`^${INTERNAL_HOST_SRC}$`, "i");
const IN_URL_PATH = new RegExp(
  `(${PRIVATE_IPV4_SRC})|(${PRIVATE_IPV6_SRC})|(${INTERNAL_HOST_SRC})`,
  "gi",
);
const IN_URL_PATH_WITH_EMAILS = new RegExp(
  `(${PRIVATE_IPV4_SRC})|(${PRIVATE_IPV6_SRC})|(${INTERNAL_HOST_SRC})|(${EMAIL_SRC})`,
  "gi",
);

function isPrivateHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  return PRIVATE_IPV4.test(bare) || PRIVATE_IPV6.test(bare) || INTERNAL_HOST.test(bare);
}

function hostOfAuthority(authority: string): string {
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    return close < 0 ? authority : authority.slice(0, close + 1);
  }
  const colon = authority.lastIndexOf(":");
  return colon < 0 ? authority : authority.slice(0, colon);
}

function redactUrl(url: string, emails: boolean): string {
  const [core, trailing] = splitTrailing(url);
  const sep = core.indexOf("://");
  const scheme = core.slice(0, sep).toLowerCase();
  if (CONNECTION_SCHEMES.has(scheme)) return URL_PLACEHOLDER + trailing;
  if (scheme === "file") return PATH + trailing;
  const rest = core.slice(sep + 3);
  const queryAt = rest.search(/[?#]/);
  // Tokens hide in query strings and fragments: cut them.
  const beforeQuery = queryAt < 0 ? rest : rest.slice(0, queryAt);
  if (hasCredentials(beforeQuery)) return URL_PLACEHOLDER + trailing;
  const slash = beforeQuery.indexOf("/");
  const authority = slash < 0 ? beforeQuery : beforeQuery.slice(0, slash);
  if (isPrivateHost(hostOfAuthority(authority).toLowerCase())) return URL_PLACEHOLDER + trailing;
  const path = slash < 0 ? "" : beforeQuery.slice(slash);
  const cleanPath = path.replace(
    emails ? IN_URL_PATH_WITH_EMAILS : IN_URL_PATH,
    (_m, ip4, ip6, host) =>
      ip4 !== undefined || ip6 !== undefined ? IP : host !== undefined ? HOST : EMAIL,
  );
  return `${core.slice(0, sep)}://${authority}${cleanPath}${trailing}`;
}

/**
 * The replacement of a location of a kind (an index of {@link LOCATION_KINDS}).
 * @internal Exported for tests; not part of the public API.
 */
export function redactLocation(match: string, kind: number, emails: boolean): string {
  if (kind === URL_KIND) return redactUrl(match, emails);
  if (kind === EMAIL_KIND) return EMAIL;
  if (kind <= LAST_PATH_KIND) {
    const [, trailing] = splitTrailing(match);
    return PATH + trailing;
  }
  return kind <= LAST_IP_KIND ? IP : HOST;
}

function nextMatch(text: string, pattern: RegExp, from: number): RegExpExecArray | null {
  pattern.lastIndex = from;
  const match = pattern.exec(text);
  pattern.lastIndex = 0;
  return match;
}

/**
 * Replaces every location as the one pattern of all kinds would, faster: with only the kinds the
 * text may hold, and URLs searched apart, from the `://` they need. The next URL and the next
 * other location are kept until passed; the leftmost goes first, a URL at a tie.
 * @internal Exported for tests; not part of the public API.
 */
export function redactLocations(text: string, emails: boolean): string {
  let mask = 0;
  // An index, not `entries()`: no pair made per kind on every text (6 % of this function).
  for (let kind = 0; kind < LOCATION_KINDS.length; kind++) {
    const { may } = LOCATION_KINDS[kind] as (typeof LOCATION_KINDS)[number];
    if ((emails || kind !== EMAIL_KIND) && may(text)) mask |= 1 << kind;
  }
  const others = mask & ~(1 << URL_KIND) ? cachedLocationPattern(mask & ~(1 << URL_KIND)) : null;
  let url = mask & (1 << URL_KIND) ? nextAnchored(text, URL_ALONE, "://", SCHEME_REACH, 0) : null;
  let other = others === null ? null : nextMatch(text, others.pattern, 0);
  let out = "";
  let last = 0;
  while (url !== null || other !== null) {
    let match: RegExpExecArray;
    let kind: number;
    if (url !== null && (other === null || url.index <= other.index)) {
      match = url;
      kind = URL_KIND;
    } else {
      match = other as RegExpExecArray;
      const group = match.findIndex((g, i) => i > 0 && g !== undefined);
      kind = others?.kinds[group - 1] as number;
    }
    out += text.slice(last, match.index) + redactLocation(match[0], kind, emails);
    // No kind matches the empty string: the next match starts after this one.
    last = match.index + match[0].length;
    if (url !== null && url.index < last) {
      url = nextAnchored(text, URL_ALONE, "://", SCHEME_REACH, last);
    }
    if (others !== null && other !== null && other.index < last) {
      other = nextMatch(text, others.pattern, last);
    }
  }
  return last === 0 ? text : out + text.slice(last);
}

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
  CALL_FRAME_LINE,
  JS_FRAME_LINE,
  PY_FRAME_LINE,
  TRACEBACK_LINE,
  MORE_FRAMES_LINE,
  DOTNET_END_LINE,
  GO_GOROUTINE_LINE,
  GO_LOCATION_LINE,
  GO_FUNCTION_LINE,
  RUST_BACKTRACE_LINE,
  RUST_FRAME_LINE,
  INLINE_FRAME,
  INLINE_BARE_FRAME,
  ...SECRET_RULES.map(([pattern]) => pattern),
  LOCATIONS_WITH_EMAILS,
  IN_URL_PATH_WITH_EMAILS,
];

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
  // Sensitive and kept values change from call to call: such a redaction is not remembered.
  const memo =
    sensitive.length === 0 && keep.length === 0
      ? memoFor(maxLength, emails, options.patterns)
      : undefined;
  const known = memo?.get(text);
  if (known !== undefined) return known;
  const out = redactText(text, maxLength, emails, sensitive, options.patterns, keep);
  memo?.set(text, out);
  return out;
}

/**
 * Recent redactions, by the options that shape them (the output cap, emails, the policy's
 * patterns): the same failure text comes back with every retry and every run. A few sets of
 * options are kept, the most recently used first, each in a slot of the judge's facts; the slot
 * of a set that is dropped is cleared before another set takes it.
 */
const memos: {
  readonly maxLength: number;
  readonly emails: boolean;
  readonly patterns: readonly (string | RegExp)[];
  readonly memo: FactSlot<string>;
}[] = [];
const MAX_MEMOS = 4;
/** Slots no set of options holds yet. */
const freeSlots: FactSlot<string>[] = Array.from({ length: MAX_MEMOS }, () =>
  judgeFacts.slot<string>((out) => out.length),
);
const NO_PATTERNS: readonly (string | RegExp)[] = [];
const NO_VALUES: readonly string[] = [];

function memoFor(
  maxLength: number,
  emails: boolean,
  patterns: readonly (string | RegExp)[] = NO_PATTERNS,
): FactSlot<string> {
  for (let i = 0; i < memos.length; i++) {
    const m = memos[i] as (typeof memos)[number];
    if (m.maxLength !== maxLength || m.emails !== emails) continue;
    if (!samePatterns(m.patterns, patterns)) continue;
    if (i > 0) {
      memos.splice(i, 1);
      memos.unshift(m);
    }
    return m.memo;
  }
  let memo = freeSlots.pop();
  if (memo === undefined) {
    memo = (memos.pop() as (typeof memos)[number]).memo;
    memo.clear();
  }
  // A copy of the patterns: a caller that changes its array later gets a memo of its own.
  memos.unshift({ maxLength, emails, patterns: [...patterns], memo });
  return memo;
}

/** Same patterns in the same order: a RegExp's source and flags cannot change. */
function samePatterns(a: readonly (string | RegExp)[], b: readonly (string | RegExp)[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function redactText(
  text: string,
  maxLength: number,
  emails: boolean,
  sensitive: readonly string[],
  patterns: readonly (string | RegExp)[] | undefined,
  keep: readonly string[],
): string {
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

  out = removeValues(out, sensitive);
  out = applyPatterns(out, patterns);
  if (out.includes("-----BEGIN ")) out = out.replace(PEM_BLOCK, REDACTED);
  out = dropStackFrames(out);
  for (const group of SECRET_GROUPS) {
    if (!group.may(out)) continue;
    for (const rule of group.rules) if (rule[2](out)) out = applySecretRule(rule, out);
  }
  out = redactLocationsKeeping(out, emails, keepable(keep, sensitive), sensitive);
  out = collapseSpaces(out);
  out = out.trim();
  return capOutput(out, maxLength);
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
