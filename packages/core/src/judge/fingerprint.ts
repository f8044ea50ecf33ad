/**
 * Failure fingerprints (DESIGN.md §2): a stable hash of (tool, channel, code, normalized text).
 * Normalization removes what varies between occurrences of the same failure, so repeats of one
 * condition count together while different conditions stay apart. A placeholder takes the whole
 * match, trailing punctuation included (a URL or path may end in `.`): consistent beats pretty.
 * Pure and bounded: the text is cut before normalizing, every pattern runs in linear time (no
 * unbounded quantifier inside another), and the normalized text is capped.
 */
import * as nodeCrypto from "node:crypto";
import type { Channel } from "../types.ts";
import { charTable, hasRun, replaceAnchored } from "./redact.ts";

const INPUT_CAP = 4096;
const NORMALIZED_CAP = 500;

const MCP_PREFIX = /^\s*mcp error -?\d+:\s*/i;

/** Keys whose identifier values name a condition (`code=not_found`), so they are kept. */
const CONDITION_KEYS = new Set([
  "code",
  "error",
  "error_code",
  "errorcode",
  "err",
  "reason",
  "type",
  "kind",
  "status",
  "category",
  "class",
]);
const CONDITION_VALUE = /^[a-z][a-z_.-]{0,39}$/;

function isConditionValue(value: string): boolean {
  const bare = /^(["'`]).*\1$/.test(value) ? value.slice(1, -1) : value;
  return CONDITION_VALUE.test(bare);
}

function isConditionPair(key: string, value: string): boolean {
  return CONDITION_KEYS.has(key) && isConditionValue(value);
}

const URL_LIKE = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}:\/\/[^\s"'`<>()[\]{}|\\^,;]*/g;
const EMAIL = /(?<![\w.+%-])[\w.+%-]+@[a-z0-9-]+\.[a-z0-9.-]*[a-z0-9]/g;
const KEY_VALUE = /(?<![\w.-])([a-z_][\w.-]{0,63})=("[^"\n]*"|'[^'\n]*'|[^\s"',;&)\]}]+)/g;
const QUOTED =
  /(?<!\w)(?:"([^"\n]{0,200})"|'([^'\n]{0,200})'|`([^`\n]{0,200})`|“([^”\n]{0,200})”|‘([^’\n]{0,200})’)(?!\w)/g;
/** The key before a quoted value: `"key": "…"` or `key="…"`. */
const KEY_BEFORE = /(?:"([\w.-]{1,40})"\s*:\s*|([\w.-]{1,40})=)$/;
const UUID =
  /(?<![0-9a-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-z])/g;
const ISO_TIMESTAMP =
  /(?<!\d)\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:z|[+-]\d{2}:?\d{2})?)?(?!\d)/g;
const MONTHS = "(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}";
const DAY_MONTH_YEAR = new RegExp(
  String.raw`(?<![a-z])(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]{0,6},?\s{1,3})?\d{1,2}[\s-]${MONTHS}[\s-]\d{2,4}(?:\s\d{1,2}:\d{2}(?::\d{2})?)?(?:\s?(?:gmt|utc|z|[+-]\d{4}))?(?![\w])`,
  "g",
);
const MONTH_DAY_YEAR = new RegExp(
  String.raw`(?<![a-z])${MONTHS}\.?\s\d{1,2}(?:st|nd|rd|th)?,?\s\d{4}(?!\d)`,
  "g",
);
const CLOCK_TIME = /(?<![\d:])\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:\s?[ap]m)?(?![\d:])/g;
const WINDOWS_PATH = /(?<![\w\\/])[a-z]:[\\/][^\s"'`<>|?*()[\]{},;]*/g;
const UNC_PATH = /(?<![\w\\])\\{2,4}[^\s\\"'`<>|?*]+\\[^\s"'`<>|?*]*/g;
const POSIX_PATH = /(?<![\w.~:/\\-])(?:~|\.{1,2})?\/[^\s/"'`<>()[\]{}|,;]+[^\s"'`<>()[\]{}|,;]*/g;
const IPV4 = /(?<![\w.])\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\d|\.\d)/g;
const IPV6 = /(?<![\w:])(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])/g;
const DOTTED = /(?<![\w.-])[a-z0-9-]+\.[a-z0-9.-]+/g;
const DURATION =
  /(?<![a-z0-9.])\d+(?:\.\d+)?\s?(?:ms|msec|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|µs|us|ns)(?![a-z0-9])/g;
const LONG_TOKEN = /(?<![a-z0-9+/=])[a-z0-9+/]{16,}={0,2}(?![a-z0-9+/=])/g;
const HEX_ID = /(?<![0-9a-z])(?:0x)?[0-9a-f]{7,}(?![0-9a-z])/g;
const NUMBER = /(?<!\d)\d(?:[\d,]*\d)?(?:\.\d+)?/g;
// Cheap tests of what the changes of a pass need (see normalizeText).
const HAS_DIGIT = /\d/;
const HAS_QUOTE = /["'`“‘]/;
/** Inside every UUID. */
const UUID_HINT = /-[0-9a-f]{4}-[0-9a-f]{4}-/;
/** Inside every date with a month name. */
const MONTH_HINT = /jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec/;
/** Inside every day-month-year date. */
const DAY_MONTH_HINT = /\d[\s-](?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)/;
/** Inside every month-day-year date. */
const MONTH_DAY_HINT = /(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\.?\s\d/;
/** Inside every IPv6 address. */
const IPV6_HINT = /:[0-9a-f]{0,4}:/;
/** Inside every dotted name the host rule replaces. */
const HOST_HINT = /\.[a-z]{2}/;
/** Whitespace that collapsing would change: other than one space. */
const UNEVEN_SPACE = /[^\S ]| {2}/;
// Read on the original text, where a protocol version is still `HTTP/1.1`, not `http/<id>`.
const STATUS_CONTEXT =
  /(?:http|status|code|error|returned|responded|response)(?:\/(?:<id>|\d{1,2}(?:\.\d)?))?[\s:=]*$/;

/**
 * Every pattern of {@link normalizeText}, for the linear-time checks in the tests.
 * @internal Exported for tests; not part of the public API.
 */
export const NORMALIZE_PATTERNS: readonly RegExp[] = [
  MCP_PREFIX,
  URL_LIKE,
  EMAIL,
  KEY_VALUE,
  QUOTED,
  UUID,
  ISO_TIMESTAMP,
  DAY_MONTH_YEAR,
  MONTH_DAY_YEAR,
  CLOCK_TIME,
  WINDOWS_PATH,
  UNC_PATH,
  POSIX_PATH,
  IPV4,
  IPV6,
  DOTTED,
  LONG_TOKEN,
  HEX_ID,
  DURATION,
  NUMBER,
];

function replaceQuoted(
  match: string,
  double: string | undefined,
  single: string | undefined,
  backtick: string | undefined,
  curlyDouble: string | undefined,
  curlySingle: string | undefined,
  offset: number,
  whole: string,
): string {
  const content = double ?? single ?? backtick ?? curlyDouble ?? curlySingle ?? "";
  // JSON keys are part of the message's shape, not a value.
  const before = whole.slice(Math.max(0, offset - 48), offset);
  const end = offset + match.length;
  if (match.startsWith('"') && /^\s*:/.test(whole.slice(end, end + 8)) && /[{,]\s*$/.test(before)) {
    return match;
  }
  // Only a condition value after a key (`"code": "x"`, `code="x"`) stays.
  if (!isConditionValue(content) || !(before.endsWith("=") || before.trimEnd().endsWith(":"))) {
    return "<str>";
  }
  const key = KEY_BEFORE.exec(before);
  const keyName = key?.[1] ?? key?.[2];
  if (keyName !== undefined && CONDITION_KEYS.has(keyName)) return match;
  return "<str>";
}

/** `[a-z0-9+/]`, the characters of a long token. */
const TOKEN_CHARS = charTable("abcdefghijklmnopqrstuvwxyz0123456789+/");
/** `[0-9a-f]`, the characters of a hex id. */
const HEX_CHARS = charTable("0123456789abcdef");

/** Whether the text holds a digit and a letter between `start` and `end`. */
function mixesDigitsAndLetters(text: string, start: number, end: number): boolean {
  let digit = false;
  let letter = false;
  for (let i = start; i < end && !(digit && letter); i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) digit = true;
    else if (code >= 97 && code <= 122) letter = true;
  }
  return digit && letter;
}

function urlPlaceholder(): string {
  return "<url>";
}

/** Keys whose HTTP-like value names the condition (`status=503` is not `status=429`). */
const STATUS_KEYS = new Set(["status", "status_code", "statuscode", "http_status", "httpstatus"]);

function replaceKeyValue(match: string, key: string, value: string): string {
  if (STATUS_KEYS.has(key) && /^[1-5]\d\d$/.test(value)) return match;
  return isConditionPair(key, value) ? match : `${key}=<v>`;
}

function replaceIpv6(match: string): string {
  return /[0-9a-f]/.test(match) ? "<ip>" : match;
}

function replaceLongToken(match: string): string {
  return /\d/.test(match) && /[a-z]/.test(match) ? "<id>" : match;
}

function replaceHexId(match: string): string {
  const hex = match.startsWith("0x") ? match.slice(2) : match;
  return /\d/.test(hex) && /[a-f]/.test(hex) ? "<id>" : match;
}

function replaceNumber(match: string, offset: number, whole: string): string {
  const before = whole.charAt(offset - 1);
  // Short digit runs glued to a word are part of a name: utf8, ipv4, base64, http2, s3.
  if (/[a-z]/.test(before) && /^\d{1,2}$/.test(match)) return match;
  // An HTTP-like status names the condition: "HTTP 503" and "HTTP 429" are different failures.
  if (
    /^[1-5]\d\d$/.test(match) &&
    STATUS_CONTEXT.test(whole.slice(Math.max(0, offset - 24), offset))
  ) {
    return match;
  }
  return "<id>";
}

function replaceDotted(match: string): string {
  let end = match.length;
  while (end > 0 && match.charAt(end - 1) === ".") end--;
  const name = match.slice(0, end);
  const labels = name.split(".");
  const last = labels[labels.length - 1] ?? "";
  if (labels.length < 2 || labels.some((l) => l === "") || !/^[a-z]{2,}$/.test(last)) return match;
  return `<host>${match.slice(end)}`;
}

/**
 * Normalizes failure text: removes what varies between occurrences of the same failure.
 *
 * Strips `MCP error -32xxx: ` prefixes (repeated ones too) and lowercases, then replaces quoted
 * values, URLs, emails, `key=value` values (the key stays), UUIDs, timestamps, dates and clock
 * times, IPs, paths, host names, long tokens, hex ids, durations and numbers with placeholders
 * (`<str>`, `<url>`, `<email>`, `<v>`, `<id>`, `<time>`, `<ip>`, `<path>`, `<host>`, `<dur>`).
 * Kept on purpose, since they tell conditions apart: JSON keys, identifier values of condition
 * keys (`code=not_found`, `"error": "rate_limited"`), HTTP-like statuses after `HTTP`/`status`,
 * and short digit runs inside words (`utf8`, `ipv4`). Whitespace is collapsed and the result is
 * capped at 500 characters. Work is bounded: only the first 4096 characters are read.
 *
 * @example
 * normalizeText('MCP error -32602: No note with id "drafts" (took 31ms)')
 * // → 'no note with id <str> (took <dur>)'
 */
export function normalizeText(text: string): string {
  let s = text.length > INPUT_CAP ? text.slice(0, INPUT_CAP) : text;
  while (MCP_PREFIX.test(s)) s = s.replace(MCP_PREFIX, "");
  s = s.toLowerCase();
  // Each pass below is skipped when the text lacks something every change it makes needs: the
  // same result, sooner. The flags are read once: no pass adds a digit, `.`, `:` or `-`
  // (placeholders are `<`, `>` and letters), so what the text lacks now it lacks at every pass.
  const digits = HAS_DIGIT.test(s);
  const dots = s.includes(".");
  const colons = s.includes(":");
  const hyphens = s.includes("-");
  // Quoted values first: whatever is inside cannot then be read by another rule.
  if (HAS_QUOTE.test(s)) s = s.replace(QUOTED, replaceQuoted);
  // A URL's scheme ends at most 31 characters after its start, where `://` follows.
  s = replaceAnchored(s, URL_LIKE, "://", 31, urlPlaceholder);
  if (s.includes("@")) s = s.replace(EMAIL, "<email>");
  if (s.includes("=")) s = s.replace(KEY_VALUE, replaceKeyValue);
  if (hyphens && UUID_HINT.test(s)) s = s.replace(UUID, "<id>");
  if (digits) {
    if (hyphens) s = s.replace(ISO_TIMESTAMP, "<time>");
    if (MONTH_HINT.test(s)) {
      if (DAY_MONTH_HINT.test(s)) s = s.replace(DAY_MONTH_YEAR, "<time>");
      if (MONTH_DAY_HINT.test(s)) s = s.replace(MONTH_DAY_YEAR, "<time>");
    }
    // IPv4 before clock times (`0.0.0.0:10` is an address and a port), IPv6 after them.
    if (dots) s = s.replace(IPV4, "<ip>");
    if (colons) s = s.replace(CLOCK_TIME, "<time>");
  }
  if (colons && IPV6_HINT.test(s)) s = s.replace(IPV6, replaceIpv6);
  if (colons && (s.includes(":\\") || s.includes(":/"))) s = s.replace(WINDOWS_PATH, "<path>");
  if (s.includes("\\\\")) s = s.replace(UNC_PATH, "<path>");
  if (s.includes("/")) s = s.replace(POSIX_PATH, "<path>");
  // A host name ends in a label of two letters or more, after a dot.
  if (dots && HOST_HINT.test(s)) s = s.replace(DOTTED, replaceDotted);
  if (digits) {
    // A long token or a hex id is a whole run of its characters, replaced when it mixes digits
    // and letters.
    if (hasRun(s, TOKEN_CHARS, 16, mixesDigitsAndLetters)) {
      s = s.replace(LONG_TOKEN, replaceLongToken);
    }
    // Hex ids before durations: `000000d` is an id, not days.
    // (Digit-only runs are left to the duration and number rules, which give them the same `<id>`.)
    if (hasRun(s, HEX_CHARS, 7, mixesDigitsAndLetters)) {
      s = s.replace(HEX_ID, replaceHexId);
    }
    s = s.replace(DURATION, "<dur>");
    s = s.replace(NUMBER, replaceNumber);
  }
  if (UNEVEN_SPACE.test(s)) s = s.replace(/\s+/g, " ");
  s = s.trim();
  return s.length > NORMALIZED_CAP ? s.slice(0, NORMALIZED_CAP) : s;
}

/**
 * The sha256 of a string's UTF-8 bytes, in hex: the one-shot `crypto.hash` where Node has it
 * (20.12+, faster for small inputs), else a `Hash` object. Both give the same digest.
 */
const sha256Hex: (text: string) => string =
  typeof nodeCrypto.hash === "function"
    ? (text) => nodeCrypto.hash("sha256", text, "hex")
    : (text) => nodeCrypto.createHash("sha256").update(text, "utf8").digest("hex");

/** What a fingerprint is computed from: the parts of a failure that identify its condition. */
export interface FingerprintInput {
  /** The tool's name, as called. */
  readonly tool: string;
  /** Where the failure surfaced. */
  readonly channel: Channel;
  /** JSON-RPC code or a Node/system error code; `5` and `"5"` are different codes. */
  readonly code?: number | string;
  /** The failure text, raw: {@link normalizeText} runs on it. */
  readonly text: string;
}

/**
 * A stable 16-char lowercase hex hash (sha256, truncated) of (tool, channel, code, normalized
 * text). Two failures that differ only in ids, numbers, paths, quoted values and the like share
 * it; a different tool, channel, code or message template does not. Stable across processes and
 * versions of Node (the hashed form is a JSON array).
 *
 * @example
 * fingerprint({ tool: "get_note", channel: "tool", text: 'no note with id "drafts"' })
 * // same as for 'no note with id "inbox"'
 */
export function fingerprint(input: FingerprintInput): string {
  const payload = JSON.stringify([
    input.tool,
    input.channel,
    input.code ?? null,
    normalizeText(input.text),
  ]);
  return sha256Hex(payload).slice(0, 16);
}
