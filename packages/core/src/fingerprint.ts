/**
 * Failure fingerprints (DESIGN.md §2): a stable hash of (tool, channel, code, normalized text).
 * Normalization removes what varies between occurrences of the same failure, so repeats of one
 * condition count together while different conditions stay apart. A placeholder takes the whole
 * match, trailing punctuation included (a URL or path may end in `.`): consistent beats pretty.
 * Pure and bounded: the text is cut before normalizing, every pattern runs in linear time (no
 * unbounded quantifier inside another), and the normalized text is capped.
 */
import { createHash } from "node:crypto";
import type { Channel } from "./types.ts";

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

function isConditionPair(key: string, value: string): boolean {
  const bare = /^(["'`]).*\1$/.test(value) ? value.slice(1, -1) : value;
  return CONDITION_KEYS.has(key) && CONDITION_VALUE.test(bare);
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
const STATUS_CONTEXT = /(?:http|status|code|error|returned|responded|response)(?:\/<id>)?[\s:=]*$/;

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

function replaceQuoted(match: string, ...args: unknown[]): string {
  const offset = args[5] as number;
  const whole = args[6] as string;
  const content = (args.slice(0, 5).find((g) => g !== undefined) as string | undefined) ?? "";
  // JSON keys are part of the message's shape, not a value.
  const before = whole.slice(Math.max(0, offset - 48), offset);
  if (
    match.startsWith('"') &&
    /[{,]\s*$/.test(before) &&
    /^\s*:/.test(whole.slice(offset + match.length, offset + match.length + 8))
  ) {
    return match;
  }
  const key = KEY_BEFORE.exec(before);
  const keyName = key?.[1] ?? key?.[2];
  if (keyName !== undefined && isConditionPair(keyName, content)) return match;
  return "<str>";
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
  // Quoted values first: whatever is inside cannot then be read by another rule.
  s = s.replace(QUOTED, replaceQuoted);
  s = s.replace(URL_LIKE, "<url>");
  s = s.replace(EMAIL, "<email>");
  s = s.replace(KEY_VALUE, (m, key: string, value: string) =>
    isConditionPair(key, value) ? m : `${key}=<v>`,
  );
  s = s.replace(UUID, "<id>");
  s = s.replace(ISO_TIMESTAMP, "<time>");
  s = s.replace(DAY_MONTH_YEAR, "<time>");
  s = s.replace(MONTH_DAY_YEAR, "<time>");
  // IPv4 before clock times (`0.0.0.0:10` is an address and a port), IPv6 after them.
  s = s.replace(IPV4, "<ip>");
  s = s.replace(CLOCK_TIME, "<time>");
  s = s.replace(IPV6, (m) => (/[0-9a-f]/.test(m) ? "<ip>" : m));
  s = s.replace(WINDOWS_PATH, "<path>");
  s = s.replace(UNC_PATH, "<path>");
  s = s.replace(POSIX_PATH, "<path>");
  s = s.replace(DOTTED, replaceDotted);
  s = s.replace(LONG_TOKEN, (m) => (/\d/.test(m) && /[a-z]/.test(m) ? "<id>" : m));
  // Hex ids before durations: `000000d` is an id, not days.
  // (Digit-only runs are left to the duration and number rules, which give them the same `<id>`.)
  s = s.replace(HEX_ID, (m) => {
    const hex = m.startsWith("0x") ? m.slice(2) : m;
    return /\d/.test(hex) && /[a-f]/.test(hex) ? "<id>" : m;
  });
  s = s.replace(DURATION, "<dur>");
  s = s.replace(NUMBER, replaceNumber);
  s = s.replace(/\s+/g, " ").trim();
  return s.length > NORMALIZED_CAP ? s.slice(0, NORMALIZED_CAP) : s;
}

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
  return createHash("sha256").update(payload, "utf8").digest("hex").slice(0, 16);
}
