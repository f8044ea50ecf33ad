/**
 * Failure fingerprints (docs/architecture.md §2): a stable hash of (tool, channel, code, normalized text).
 * Normalization removes what varies between occurrences of the same failure, so repeats of one
 * condition count together while different conditions stay apart. A placeholder takes the whole
 * match, trailing punctuation included (a URL or path may end in `.`): consistent beats pretty.
 * Pure and bounded: the text is cut before normalizing, every pattern runs in linear time (no
 * unbounded quantifier inside another), and the normalized text is capped.
 */
import type { Channel } from "../types.ts";
import { sha256Hex } from "./canonical.ts";
import { argumentValues } from "./echoes.ts";
import {
  foldArgumentValues,
  foldValues,
  isTemplateNoun,
  useVocabulary,
} from "./fingerprint-fold.ts";
import { hasHostHint, hasIpv6Hint, hasOpeningQuote } from "./normalize-hints.ts";
import { colonFollows, endsInObjectSeparator, keyAtEnd } from "./quote-context.ts";
import { charTable, collapseSpaces, hasRun, replaceAnchored } from "./redact.ts";
import { replaceEach } from "./replace-each.ts";

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
  "errortype",
  "error_type",
  "statuscode",
  "status_code",
]);
const CONDITION_VALUE = /^[a-z][a-z_.-]{0,39}$/;

/**
 * Keys whose quoted value is a message of the upstream API (`{"message": "…"}`, `'reason': …`,
 * Google's `returned "…"`): prose is kept, with its values normalized, so two upstream failures
 * behind one wrapper stay apart. A one-word value is still a value.
 */
const MESSAGE_KEYS = new Set([
  "message",
  "msg",
  "detail",
  "details",
  "description",
  "error",
  "error_description",
  "error_message",
  "errormessage",
  "title",
  "reason",
  "returned",
  "statusmessage",
  "status_message",
  "statustext",
  "usermessage",
  "user_message",
  "developermessage",
  "errorsummary",
  "error_summary",
  "errordetail",
  "error_detail",
  "faultstring",
  "hint",
]);

/**
 * Keys whose value names an error class (`"name": "ValidationError"`, AWS's `"__type":
 * "ResourceNotFoundException"`): kept when it names a condition, a value otherwise.
 */
const NAME_KEYS = new Set([
  "name",
  "__type",
  "exception",
  "exception_type",
  "exceptiontype",
  "error_name",
  "errorname",
]);

/**
 * Words of error vocabulary: a snake_case or kebab-case identifier with one of them as a part
 * names a condition (`index_not_found_exception`, `rate_limit_exceeded`, `too_small`), one
 * without names a thing (`customer_orders`, `orders-v2`, `perplexity_ask`) and is a value.
 */
const CONDITION_WORDS = new Set(
  (
    "error err errors exception fail failed failure invalid missing not found notfound no none " +
    "denied unauthorized unauthenticated forbidden exceeded exceed limit limited limits timeout " +
    "timed out unavailable unknown refused reset conflict duplicate required unsupported " +
    "supported too many small big large long short quota rate throttled expired locked lock " +
    "abort aborted cancelled canceled bad internal permission permissions access auth " +
    "authentication overloaded busy insufficient disabled blocked rejected violation mismatch " +
    "malformed illegal parse parsing syntax argument value exists already unreachable closed " +
    "lost empty type enum equal less greater than max min length range format constraint " +
    "precondition deadline unprocessable gateway service request connection socket network tls " +
    "ssl certificate status code eai again und read only write breaking allowed " +
    // States an upstream code names (`ACCOUNT_SUSPENDED`, `card_declined`): a condition, not a name.
    "suspended inactive paused revoked declined pending restricted archived deleted deprecated " +
    "unverified unconfirmed exhausted overdue frozen banned unpaid terminated immutable readonly " +
    "gone stale outdated conflicting retired removed unsubscribed disallowed prohibited " +
    "mismatched misconfigured unset undefined null overflow deadlock deadlocked crashed panic " +
    "fatal corrupt corrupted unsafe protected offline stopped incompatible ambiguous unrecognized " +
    "unrecognised unauthorised untrusted insecure degraded maintenance uninitialized"
  ).split(" "),
);

useVocabulary(CONDITION_WORDS);

function isConditionValue(value: string): boolean {
  const bare = /^(["'`]).*\1$/.test(value) ? value.slice(1, -1) : value;
  return CONDITION_VALUE.test(bare);
}

function isConditionPair(key: string, value: string): boolean {
  return CONDITION_KEYS.has(key) && isConditionValue(value);
}

const URL_LIKE = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}:\/\/[^\s"'`<>()[\]{}|\\^,;]*/g;
const EMAIL = /(?<![\w.+%-])[\w.+%-]+@[a-z0-9-]+\.[a-z0-9.-]*[a-z0-9]/g;
/**
 * `key=value`; a placeholder after `=` is the value, and an unquoted value ends at `<` or `>`
 * (`class=<str>>…</div>`: the tag goes on).
 */
const KEY_VALUE =
  /(?<![\w.-])([a-z_][\w.-]{0,63})=("[^"\n]*"|'[^'\n]*'|<[a-z]{1,5}>|[^\s"',;&)\]}<>]+)/g;
const QUOTED =
  /(?<!\w)(?:"("|[^"\n]{0,200})"|'([^'\n]{0,200})'|`([^`\n]{0,200})`|“([^”\n]{0,200})”|‘([^’\n]{0,200})’)(?!\w)/g;
/** A value in square brackets, one token long (`[logs-app]`, `[read,all]`); not an index `a[0]`. */
const BRACKETED = /(?<![\w\]])\[([^\s[\]{}]{1,120})\]/g;
/** `name = value` with spaces around `=` (`name = es-data-2/search`). */
const SPACED_KEY_VALUE = /(?<![\w.-])([a-z_][\w.-]{0,63}) = ([^\s"',;&)\]}]{1,120})/g;
/** What follows a path after a space when it still is the path: `/a/my file.txt`, `/a/b c/d`. */
const PATH_TAIL =
  /<path>(?: [\w.-]{1,80}\/[^\s"'`<>()[\]{}|,;]{0,200}| [\w-]{1,80}\.[a-z0-9]{1,5}:?(?=[\s,'")\]]|$)|(?:<[a-z]{1,5}>|[\w.-]){1,80})/g;
/** A key of colons (`cache:user:42`, `read:clients`), its last part may be a path or a star. */
const COLON_KEY = /(?<![\w:/<>.-])[a-z][\w.-]{0,40}(?::[\w.*/-]{1,60}){1,8}(?![\w:/])/g;
/** The value after a naming phrase: `with name orderz`, `named x`, `by user ana`, `name: x`. */
const NAMED =
  /\b(with (?:name|slug|handle|alias|username|title|label|id|key|identifier|ref)|named|by user|for user|name:|name =)( +)([^\s,;()[\]<>"'`]{1,80})/g;
/** The subject of `: x is not defined`, `: x does not exist`, `: x is not a valid id`. */
const SUBJECT =
  /(: )([^\s,;()[\]<>"'`]{1,60})(?= (?:is not defined|does not exist|is not a valid|not found\b))/g;
/** A short tail after `not found:`, `unknown tool:` and the like, up to the end of the line. */
const NAMED_TAIL =
  /\b(not found|unknown [a-z]{1,20}|no such [a-z]{1,20}|not defined|invalid [a-z]{1,20}): ([^\s"'`:]{1,60}(?: [^\s"'`:]{1,60}){0,2})(?=\n|$)/g;
/** The host of `getaddrinfo ENOTFOUND host`. */
const NOT_FOUND_HOST = /\bgetaddrinfo (enotfound|eai_again) ([^\s"'`,;()]{1,253})/g;
/**
 * An identifier written in camel case (`sessionsPerUser`, `PromptVersion`, `issueTypeId`): a
 * lowercase or capitalized word with one capitalized word or more glued after it.
 */
const CAMEL_IDENTIFIER =
  /(?<![\w$.-])(?:[a-z]{1,30}|[A-Z][a-z]{1,30})(?:[A-Z][a-z0-9]{1,30}){1,8}(?![\w-])/g;
/** What follows the identifier a sentence is about: the noun of its slot, or what it lacks. */
const SLOT_SUBJECT =
  /^ (?:(?:parameter|param|argument|field|property|option)s? )?(?:(?:is|are) (?:required|missing)\b|must\b|cannot\b)/i;
/** Inside every match of CAMEL_IDENTIFIER: a lowercase letter, a capital, a lowercase letter. */
const CAMEL_HINT = /[a-z][A-Z][a-z]/;

/**
 * The identifiers in camel case the text writes inside a sentence, at most 8. One that opens the
 * text is its subject (`datasetName parameter is required`): a sentence a server may write for
 * that one slot, kept.
 */
function camelIdentifiers(text: string): string[] | undefined {
  const found: string[] = [];
  const opening = text.search(/\S/);
  for (const m of text.matchAll(CAMEL_IDENTIFIER)) {
    if (found.length >= 8) break;
    if (m.index === opening) continue;
    // The subject of a sentence about one slot (`…: datasetName parameter is required`), wherever
    // the sentence starts: a server writes that sentence for each slot.
    const end = (m.index as number) + m[0].length;
    if (SLOT_SUBJECT.test(text.slice(end, end + 30))) continue;
    if (!found.includes(m[0])) found.push(m[0]);
  }
  return found.length > 0 ? found : undefined;
}

/** Go's compound durations (`1m30s`, `2h0m0.5s`) and sizes (`256.0 KiB`, `974mb`). */
const DURATION_OR_SIZE =
  /(?<![a-z0-9.])\d{1,15}(?:\.\d{1,9})?(?:(?:h|m|s|ms|us|µs|ns)(?:\d{1,9}(?:\.\d{1,9})?(?:h|m|s|ms|us|µs|ns)){1,5}| ?(?:[kmgtp]i?b|bytes))(?![a-z0-9])/g;
/** Runs of one placeholder separated by commas: lists of different length read the same. */
const PLACEHOLDER_LIST = /(<(?:str|v|path|host|url|email|ip|id)>)(?:, ?\1){1,100}/g;
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
/**
 * A relative path (`reports/2024/q3.csv`, `src/app.ts`): three segments or more, or two with a
 * file extension. Two words around a slash (`and/or`, `read/write`, `application/json`) are not.
 */
const RELATIVE_PATH =
  /(?<![\w.~:/\\<>@-])[\w.-]{1,200}(?:\/[\w.@+-]{1,200}){2,32}\/?|(?<![\w.~:/\\<>@-])[\w-]{1,200}\/[\w@+-][\w.@+-]{0,200}\.[a-z][a-z0-9]{0,4}(?![\w/])/g;
const IPV4 = /(?<![\w.])\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\d|\.\d)/g;
const IPV6 = /(?<![\w:])(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])/g;
const DOTTED = /(?<![\w.-])[a-z0-9-]+\.[a-z0-9.-]+/g;
const DURATION =
  /(?<![a-z0-9.])\d+(?:\.\d+)?\s?(?:ms|msec|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|µs|us|ns)(?![a-z0-9])/g;
const LONG_TOKEN = /(?<![a-z0-9+/=])[a-z0-9+/]{16,}={0,2}(?![a-z0-9+/=])/g;
const HEX_ID = /(?<![0-9a-z])(?:0x)?[0-9a-f]{7,}(?![0-9a-z])/g;
const NUMBER = /(?<!\d)\d(?:[\d,]*\d)?(?:\.\d+)?/g;
/**
 * A capitalized word inside a sentence, after a lowercase word: a proper name (`in Budget`). Read
 * by hand in {@link properNames}, which answers as this pattern does (a test holds it).
 * @internal Exported for tests; not part of the public API.
 */
export const PROPER_NAME =
  /(?<=[a-z0-9,] )(?:[A-Z][a-z]{1,40}|[A-Z][A-Z][A-Z0-9]{1,18})(?=[\s.,;:!?)'"]|$)/g;
// Cheap tests of what the changes of a pass need (see normalizeText).
const HAS_DIGIT = /\d/;
/** Inside every date with a month name. */
const MONTH_HINT = /jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec/;
/** Inside every day-month-year date. */
const DAY_MONTH_HINT = /\d[\s-](?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)/;
/** Inside every month-day-year date. */
const MONTH_DAY_HINT = /(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\.?\s\d/;
// Read on the original text, where a protocol version is still `HTTP/1.1`, not `http/<id>`.
const STATUS_CONTEXT =
  /(?:http|status|code|error|returned|responded|response)(?:\/(?:<id>|\d{1,2}(?:\.\d)?))?[\s:=]*$/;

/**
 * A numeric code or status after its key (`"code": 40301`, `status: 403`, `errno=1045`): the
 * number names the condition, as an error code's identifier does.
 */
const CODE_CONTEXT =
  /\b(?:code|errno|err_?code|error_?code|errorcode|status|status_?code|statuscode|http_?status|response_?code|http_?code)["']?\s?[:=]\s?(?:["'][a-z]{0,12}[_-]?)?$/;

/** A JSON key of a code right before a number: `"code": `, `"error_code":`. */
const JSON_CODE_CONTEXT = /["'](?:code|errno|err_?code|error_?code|errorcode)["']\s?:\s?$/;

/**
 * UUID and ISO_TIMESTAMP, sticky: tried only where their `-` is (see replaceAnchored).
 * @internal Exported for tests; not part of the public API.
 */
export const UUID_AT = new RegExp(UUID.source, "y");
export const ISO_TIMESTAMP_AT = new RegExp(ISO_TIMESTAMP.source, "y");

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
  RELATIVE_PATH,
  IPV4,
  IPV6,
  DOTTED,
  LONG_TOKEN,
  HEX_ID,
  DURATION,
  NUMBER,
  CODE_CONTEXT,
  BRACKETED,
  SPACED_KEY_VALUE,
  PATH_TAIL,
  COLON_KEY,
  NAMED,
  SUBJECT,
  NAMED_TAIL,
  NOT_FOUND_HOST,
  DURATION_OR_SIZE,
  PLACEHOLDER_LIST,
];

/**
 * The patterns fingerprintOf reads on the original text, for the linear-time checks in the tests.
 * @internal Exported for tests; not part of the public API.
 */
export const ORIGINAL_TEXT_PATTERNS: readonly RegExp[] = [
  CAMEL_IDENTIFIER,
  CAMEL_HINT,
  SLOT_SUBJECT,
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
  if (match.startsWith('"') && colonFollows(whole, end) && endsInObjectSeparator(before)) {
    return match;
  }
  // A message of the upstream API stays, its own quoted values normalized; values inside it are
  // read by the passes that follow.
  if (content.includes(" ")) {
    const keyName = keyBefore(before);
    if (
      (keyName !== undefined && MESSAGE_KEYS.has(keyName)) ||
      QUOTED_MESSAGE.test(content) ||
      ERROR_TUPLE_OPEN.test(before)
    ) {
      const quote = match.charAt(0);
      const inner = content.replace(INNER_QUOTED, replaceQuoted);
      return `${quote}${inner}${match.charAt(match.length - 1)}`;
    }
  }
  // A code or status in quotes (`"status": "404"`, `"code": "E1045"`) names the condition as its
  // number would.
  if (QUOTED_CODE.test(content) && (before.endsWith("=") || before.trimEnd().endsWith(":"))) {
    const keyName = keyAtEnd(before);
    if (keyName !== undefined && (CODE_KEYS.has(keyName) || STATUS_KEYS.has(keyName))) return match;
  }
  // Only a condition value after a key (`"code": "x"`, `code="x"`) stays.
  if (!isConditionValue(content) || !(before.endsWith("=") || before.trimEnd().endsWith(":"))) {
    return "<str>";
  }
  const keyName = keyAtEnd(before);
  if (keyName !== undefined && CONDITION_KEYS.has(keyName)) return match;
  // The value of a key that names a tool or a command (`"toolname": "fetch_error_report"`) is
  // its name, whatever words it holds.
  if (keyName !== undefined && THING_KEYS.has(keyName)) return "<str>";
  // One word of a condition after a colon, whatever names it (`upstream said: "Forbidden"`); a
  // word that is as often the name of a field or an argument (`Error: 'limit' must be …`,
  // `unknown field: "type"`) is that name there.
  if (namesCondition(content) && !FIELD_LIKE_WORDS.has(content)) return match;
  // A one-word upstream message that names a condition (`"message": "Forbidden"`) is the
  // condition: `Forbidden` and `Unauthorized` behind one wrapper are two failures.
  if (
    keyName !== undefined &&
    (MESSAGE_KEYS.has(keyName) || NAME_KEYS.has(keyName)) &&
    namesCondition(content)
  ) {
    return match;
  }
  return "<str>";
}

/**
 * Keys whose value is the name of a tool or a command the call named: a value, even when its
 * words are error vocabulary (`"toolname": "fetch_error_report"`). Not a field's key: which
 * field an upstream rejects (`"field": "time_window"`) is part of its answer.
 */
const THING_KEYS = new Set(["tool", "toolname", "tool_name", "command", "command_name"]);

/**
 * Words of error vocabulary that are as often the name of a field, an argument or a column
 * (`limit`, `type`, `status`): alone in quotes after a colon, a name, not a condition.
 */
const FIELD_LIKE_WORDS = new Set(
  (
    "type status code value values limit limits format length range max min size enum argument " +
    "request connection service socket network gateway read write syntax constraint certificate " +
    "state mode scope"
  ).split(" "),
);

/**
 * The opening of an error tuple, as Python drivers print one: `(1062, "Duplicate entry …")`. Its
 * number is the error's code, its string the message.
 */
const ERROR_TUPLE_OPEN = /\((?:\d{3,5}|<id>), ?$/;

/** A code in quotes: 3 to 6 digits, or letters with digits (`E1045`, `ERR-1045`, `PGRST116`). */
const QUOTED_CODE = /^(?:\d{3,6}|[a-z]{1,12}[_-]?\d{2,8})$/;

/** Whether a one-word value is error vocabulary, or a compound of it (`not_found`, `notfound`, `ValidationError`). */
function namesCondition(word: string): boolean {
  const lower = word.toLowerCase();
  for (const part of lower.split(/[_.-]/)) if (CONDITION_WORDS.has(part)) return true;
  return /error|exception|fail|denied|forbidden|unauthori[sz]ed|invalid|notfound|timeout|exceeded|unavailable|conflict|expired|limit|nosuch|toomany|exhausted|throttl|badrequest|required|unprocessable|slowdown|notallowed|unsupported|overload|suspended|revoked|missing|busy/.test(
    lower,
  );
}

/**
 * Quoted prose that reads as an error message, whatever key it follows (`failed: "Rate limit
 * exceeded"`): kept like a message, with its own values normalized. A name with spaces
 * (`"Quarterly Report"`) holds none of these words.
 */
const QUOTED_MESSAGE =
  /\b(?:error|errors|failed|failure|denied|unauthori[sz]ed|forbidden|invalid|missing|not found|exceeded|timed out|timeout|unavailable|refused|required|unsupported|not supported|expired|insufficient|not allowed|rate limit|quota|can't|cannot|could not|couldn't|unable to|must|blank|does not|doesn't|no such|not a valid|no [a-z]{1,30} found|already exists)\b/;

/** replaceQuoted for {@link replaceEach}. */
function quotedMatch(m: RegExpExecArray, whole: string): string {
  return replaceQuoted(m[0], m[1], m[2], m[3], m[4], m[5], m.index, whole);
}

/** QUOTED for the quoted values inside a kept message (a regex of its own: no shared state). */
const INNER_QUOTED = new RegExp(QUOTED.source, "g");

/** `[a-z0-9_.-]`, the characters of a key. */
const KEY_NAME_CHARS = charTable("abcdefghijklmnopqrstuvwxyz0123456789_.-");

/**
 * The key at the end of `before`, the text before a quoted value: `"key": `, `'key': `,
 * `key: ` or `key ` (`returned "…"`); read backwards, at most 40 characters of key.
 */
function keyBefore(before: string): string | undefined {
  let end = before.length;
  while (end > 0 && before.charCodeAt(end - 1) === 32) end--;
  if (before.charCodeAt(end - 1) === 58) end--; // ":"
  while (end > 0 && before.charCodeAt(end - 1) === 32) end--;
  const quote = before.charCodeAt(end - 1);
  const quoted = quote === 34 || quote === 39;
  if (quoted) end--;
  let start = end;
  while (start > 0 && end - start < 40 && isIn(KEY_NAME_CHARS, before.charCodeAt(start - 1)))
    start--;
  if (start === end || (quoted && before.charCodeAt(start - 1) !== quote)) return undefined;
  return before.slice(start, end);
}

/** A bracketed value becomes `[<v>]`; digits alone are left to the number rules. */
function replaceBracketed(match: string, content: string): string {
  return /^\d+$/.test(content) ? match : "[<v>]";
}

function replaceSpacedKeyValue(match: string, key: string, value: string): string {
  return isConditionPair(key, value) ? match : `${key} = <v>`;
}

/** `[a-z0-9]`, the characters either side of the joint of an identifier (`a_b`, `a-b`). */
const ALNUM_CHARS = charTable("abcdefghijklmnopqrstuvwxyz0123456789");
/** `[a-z0-9_-]`, the characters of a snake_case or kebab-case identifier. */
const IDENTIFIER_CHARS = charTable("abcdefghijklmnopqrstuvwxyz0123456789_-");
/** What may not touch an identifier on its left: it would be part of a key, path, host or placeholder. */
const NOT_BEFORE_IDENTIFIER = charTable("<>=./:'\"`@\\ABCDEFGHIJKLMNOPQRSTUVWXYZ");
/** What may not touch an identifier on its right. */
const NOT_AFTER_IDENTIFIER = charTable("<>=/'\"`@\\ABCDEFGHIJKLMNOPQRSTUVWXYZ");

function isIn(set: Uint8Array, code: number): boolean {
  return code < 128 && set[code] === 1;
}

/**
 * Replaces snake_case and kebab-case identifiers (`customer_orders`, `orders-v2`) with `<v>`
 * unless a part is error vocabulary (CONDITION_WORDS) or the original text wrote the identifier
 * in capitals (`EAI_AGAIN`). An identifier starts with a letter and has 2 to 9 parts of 1 to 41
 * characters joined by one `_` or `-`; one touching a key, path, host or placeholder is left.
 * One linear scan from joint to joint.
 */
function replaceIdentifiers(s: string, original: string): string {
  let out = "";
  let copied = 0;
  let capitals: ReadonlySet<string> | undefined;
  for (let at = nextJoint(s, 0); at >= 0; at = nextJoint(s, at + 1)) {
    if (at < copied) continue;
    let start = at;
    while (start > 0 && isIn(IDENTIFIER_CHARS, s.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < s.length && isIn(IDENTIFIER_CHARS, s.charCodeAt(end))) end++;
    const token = s.slice(start, end);
    at = end;
    if (
      isIn(NOT_BEFORE_IDENTIFIER, s.charCodeAt(start - 1)) ||
      isIn(NOT_AFTER_IDENTIFIER, s.charCodeAt(end)) ||
      !isPlainIdentifier(token)
    ) {
      continue;
    }
    capitals ??= identifiersInCapitals(original);
    if (capitals.has(token)) continue;
    out += `${s.slice(copied, start)}<v>`;
    copied = end;
  }
  return copied === 0 ? s : out + s.slice(copied);
}

/**
 * The identifiers the text writes in capitals (`EAI_AGAIN`, `ERR-42`), lowercased: each maximal
 * run of capitals, digits, `_` and `-` around a `_` or `-` that holds a capital. Read from each
 * joint outwards, each run once (a search of the whole text for each identifier costs the square
 * of its length).
 */
function identifiersInCapitals(original: string): ReadonlySet<string> {
  const found = new Set<string>();
  let done = 0;
  for (const joint of ["_", "-"]) {
    done = 0;
    for (let at = original.indexOf(joint); at >= 0; at = original.indexOf(joint, at + 1)) {
      if (at < done) continue;
      let start = at;
      while (start > 0 && isCapitalsRun(original.charCodeAt(start - 1))) start--;
      let end = at + 1;
      while (end < original.length && isCapitalsRun(original.charCodeAt(end))) end++;
      done = end;
      const run = original.slice(start, end);
      if (/[A-Z]/.test(run)) found.add(run.toLowerCase());
    }
  }
  return found;
}

/** `[A-Z0-9_-]`: a character of an identifier written in capitals. */
function isCapitalsRun(code: number): boolean {
  return isUpperOrDigit(code) || code === 95 || code === 45;
}

/** The next `_` or `-` from `from` with a letter or digit on each side, or -1. */
function nextJoint(s: string, from: number): number {
  let underscore = s.indexOf("_", from);
  let hyphen = s.indexOf("-", from);
  while (underscore >= 0 || hyphen >= 0) {
    const at = hyphen < 0 || (underscore >= 0 && underscore < hyphen) ? underscore : hyphen;
    if (isIn(ALNUM_CHARS, s.charCodeAt(at - 1)) && isIn(ALNUM_CHARS, s.charCodeAt(at + 1))) {
      return at;
    }
    if (at === underscore) underscore = s.indexOf("_", at + 1);
    else hyphen = s.indexOf("-", at + 1);
  }
  return -1;
}

/** An identifier of the shape above with no part of error vocabulary. */
function isPlainIdentifier(token: string): boolean {
  const first = token.charCodeAt(0);
  if (first < 97 || first > 122) return false;
  const parts = token.split(/[_-]/);
  if (parts.length < 2 || parts.length > 9) return false;
  for (const part of parts) {
    if (part.length === 0 || part.length > 41 || CONDITION_WORDS.has(part)) return false;
  }
  return true;
}
/** Letters, digits and `_ . * / -`: what may follow the colon of a key of colons. */
const COLON_KEY_CHARS = charTable("abcdefghijklmnopqrstuvwxyz0123456789_.*/-");

/**
 * Whether one of the `joints` characters stands between two characters of `set` (`a_b`), or, with
 * `after`, between a character of `set` and one of `after` (`cache:user`): a cheap test of
 * what a pass needs before its pattern runs.
 */
function hasJoin(text: string, set: Uint8Array, joints: string, after: Uint8Array = set): boolean {
  for (let j = 0; j < joints.length; j++) {
    const joint = joints.charAt(j);
    for (let at = text.indexOf(joint, 1); at >= 0; at = text.indexOf(joint, at + 1)) {
      const before = text.charCodeAt(at - 1);
      const next = text.charCodeAt(at + 1);
      if (before < 128 && set[before] === 1 && next < 128 && after[next] === 1) return true;
    }
  }
  return false;
}

/**
 * Replacers of the values that are words (NAMED, SUBJECT, NAMED_TAIL): each value becomes `<v>`,
 * whatever shape an earlier pass gave it, and is remembered so that its echoes elsewhere in the
 * text (`table with name orderz … select * from orderz`) become `<v>` too.
 */
function wordValueReplacers(seen: string[]) {
  const remember = (value: string) => {
    if (value.length >= 3 && !value.includes("<") && seen.length < 8) seen.push(value);
  };
  return {
    named(_match: string, lead: string, space: string, value: string): string {
      // Trailing sentence punctuation is not part of the value.
      const end = value.search(/[.!?:]*$/);
      remember(value.slice(0, end));
      return `${lead}${space}<v>${value.slice(end)}`;
    },
    subject(_match: string, lead: string, value: string): string {
      remember(value);
      return `${lead}<v>`;
    },
    tail(_match: string, lead: string, value: string): string {
      remember(value);
      return `${lead}: <v>`;
    },
  };
}

/** Inside every match of NAMED, SUBJECT and NAMED_TAIL: cheap tests before their patterns run. */
const NAMED_LEADS =
  /with name|with slug|with handle|with alias|with username|with title|with label|with id|with key|with identifier|with ref|named |name:|name =|by user|for user/;
const SUBJECT_PHRASES = / is not defined| does not exist| is not a valid| not found/;
/**
 * Words searched before NAMED_LEADS and SUBJECT_PHRASES: every alternative of each holds one of its
 * words, and most texts hold none. A search for a word tries each place its first character is,
 * so none starts with a space (`user`, not ` user`: twice as fast on the corpus).
 * @internal Exported for tests; not part of the public API.
 */
export const WORD_VALUE_HINTS: readonly (readonly [RegExp, readonly string[]])[] = [
  [NAMED_LEADS, ["name", "user", "with "]],
  [SUBJECT_PHRASES, ["not "]],
];
const [NAMING_HINT, SUBJECT_HINT] = WORD_VALUE_HINTS as readonly [
  readonly [RegExp, readonly string[]],
  readonly [RegExp, readonly string[]],
];

/** Whether the text holds one of the hint's words, then its pattern. */
function holdsHint(text: string, hint: readonly [RegExp, readonly string[]]): boolean {
  const words = hint[1];
  for (let i = 0; i < words.length; i++) {
    if (text.includes(words[i] as string)) return hint[0].test(text);
  }
  return false;
}
const TAIL_LEADS = /not found: |unknown |no such |not defined: |invalid /;

/** Every whole-word occurrence of the values in `seen` becomes `<v>`. */
function replaceEchoes(s: string, seen: readonly string[]): string {
  let out = s;
  for (const value of seen) {
    let from = 0;
    for (let at = out.indexOf(value, from); at >= 0; at = out.indexOf(value, from)) {
      const end = at + value.length;
      if (isWordChar(out.charCodeAt(at - 1)) || isWordChar(out.charCodeAt(end))) {
        from = end;
        continue;
      }
      out = `${out.slice(0, at)}<v>${out.slice(end)}`;
      from = at + 3;
    }
  }
  return out;
}

/** `[a-z0-9_]`, for the word boundaries of replaceEchoes (NaN, out of range, is not). */
function isWordChar(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || code === 95;
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

function idPlaceholder(): string {
  return "<id>";
}

function timePlaceholder(): string {
  return "<time>";
}

function urlPlaceholder(): string {
  return "<url>";
}

function pathPlaceholder(): string {
  return "<path>";
}

function durationOrSize(m: RegExpExecArray): string {
  const match = m[0];
  return match.endsWith("b") || match.endsWith("bytes") ? "<size>" : "<dur>";
}

/** Keys whose HTTP-like value names the condition (`status=503` is not `status=429`). */
const STATUS_KEYS = new Set([
  "status",
  "status_code",
  "statuscode",
  "http_status",
  "httpstatus",
  "response_code",
  "responsecode",
  "http_code",
  "httpcode",
]);

/** Keys whose number names the condition (`errno=1045`, `code=40301`). */
const CODE_KEYS = new Set(["code", "errno", "err_code", "errcode", "error_code", "errorcode"]);

function replaceKeyValue(m: RegExpExecArray): string {
  const match = m[0];
  // Both groups of KEY_VALUE always take part in a match.
  const key = m[1] as string;
  const value = m[2] as string;
  if (STATUS_KEYS.has(key) && /^[1-5]\d\d$/.test(value)) return match;
  if (CODE_KEYS.has(key) && /^\d{3,6}$/.test(value)) return match;
  return isConditionPair(key, value) ? match : `${key}=<v>`;
}

function replaceIpv6(m: RegExpExecArray): string {
  const match = m[0];
  return /[0-9a-f]/.test(match) ? "<ip>" : match;
}

function replaceLongToken(m: RegExpExecArray): string {
  const match = m[0];
  return /\d/.test(match) && /[a-z]/.test(match) ? "<id>" : match;
}

function replaceHexId(m: RegExpExecArray, whole: string): string {
  const match = m[0];
  const hex = match.startsWith("0x") ? match.slice(2) : match;
  if (!(/\d/.test(hex) && /[a-f]/.test(hex))) return match;
  // A code in quotes after its key (`"errorCode": "E0000011"`) is the condition's name.
  return isQuotedCode(whole, m.index, match.length) ? match : "<id>";
}

/** Whether the `length` characters at `offset` are a whole quoted code after a code or status key. */
function isQuotedCode(whole: string, offset: number, length: number): boolean {
  const quote = whole.charAt(offset - 1);
  return (
    (quote === '"' || quote === "'") &&
    whole.charAt(offset + length) === quote &&
    CODE_CONTEXT.test(whole.slice(Math.max(0, offset - 24), offset))
  );
}

function replaceNumber(m: RegExpExecArray, whole: string): string {
  const match = m[0];
  const offset = m.index;
  const before = whole.charAt(offset - 1);
  if (
    match.length >= 3 &&
    (match.length <= 6 || (match.length <= 8 && /[a-z_-]/.test(before))) &&
    /^\d+$/.test(match) &&
    CODE_CONTEXT.test(whole.slice(Math.max(0, offset - 24), offset))
  ) {
    return match;
  }
  // A short code in JSON (`"code": 7`, gRPC's and many APIs'): the number names the condition.
  if (
    match.length <= 2 &&
    /^\d+$/.test(match) &&
    JSON_CODE_CONTEXT.test(whole.slice(Math.max(0, offset - 24), offset))
  ) {
    return match;
  }
  // The code that opens an error tuple: `(1062, "Duplicate entry …")`.
  if (
    before === "(" &&
    match.length >= 3 &&
    match.length <= 5 &&
    /^, ?["'<]/.test(whole.slice(offset + match.length, offset + match.length + 3))
  ) {
    return match;
  }
  // Short digit runs glued to a word are part of a name: utf8, ipv4, base64, http2, s3.
  if (/[a-z]/.test(before) && /^\d{1,2}$/.test(match)) return match;
  // An HTTP-like status names the condition: "HTTP 503" and "HTTP 429" are different failures.
  if (
    /^[1-5]\d\d$/.test(match) &&
    STATUS_CONTEXT.test(whole.slice(Math.max(0, offset - 24), offset))
  ) {
    return match;
  }
  // A 4xx or 5xx status written in prose (`failed with 404`, `API error (500)`, `[503]`, `a 404
  // status`, `: 403 forbidden`): the answer of the server, not a value of the call.
  if (/^[45]\d\d$/.test(match) && statusInProse(whole, offset, offset + 3)) return match;
  return "<id>";
}

/** Proper names of `original` (same length as `lower`) become `<v>` in `lower`. */
function replaceProperNames(original: string, lower: string): string {
  let out = "";
  let copied = 0;
  for (const [at, end] of properNames(original)) {
    const word = lower.slice(at, end);
    const stem = word.endsWith("s") ? word.slice(0, -1) : word;
    if (CONDITION_WORDS.has(word) || CONDITION_WORDS.has(stem) || PROSE_WORDS.has(word)) continue;
    // Months and days are read with their dates.
    if (CALENDAR_WORD.test(word)) continue;
    // In capitals: an acronym of the message (`API`, `JSON`), an HTTP method or a system error
    // code (`ECONNREFUSED`) is the text's own.
    if (
      isUpperCode(original.charCodeAt(at + 1)) &&
      (ACRONYMS.has(word) || /^e[a-z]{4,}$/.test(word))
    ) {
      continue;
    }
    // A word of a path with a space in it (`/data/Quarterly Report.xlsx`) is the path's.
    const tokenStart = original.lastIndexOf(" ", at - 2) + 1;
    if (/[/\\]/.test(original.slice(tokenStart, at))) continue;
    // The first word of a name of words that opens a clause (`: Marketing Site`, `(Sales Team`)
    // is the name's too.
    const first = nameStartBefore(original, lower, at, copied);
    out += `${lower.slice(copied, first)}<v>`;
    copied = end;
  }
  return copied === 0 ? lower : out + lower.slice(copied);
}

/**
 * Where the name at `at` starts: at the capitalized word before it (`Marketing` of `: Marketing
 * Site`) when that word opens a clause (after `: `, `- `, `(` or a quote) and is no word of a
 * message (prose, error vocabulary, the noun of a kind: `: Table Orders` keeps `table`); else `at`.
 */
function nameStartBefore(original: string, lower: string, at: number, from: number): number {
  if (original.charCodeAt(at - 1) !== 32) return at;
  let start = at - 1;
  while (start > from && start > at - 42 && isLowerCode(original.charCodeAt(start - 1))) start--;
  // `start` is on the word's second letter; its capital is before it.
  if (start === at - 1 || start - 1 < from || !isUpperCode(original.charCodeAt(start - 1)))
    return at;
  start--;
  const before = original.charCodeAt(start - 1);
  const opens =
    before === 40 ||
    before === 34 ||
    before === 39 ||
    (before === 32 &&
      (original.charCodeAt(start - 2) === 58 || original.charCodeAt(start - 2) === 45));
  if (!opens) return at;
  const word = lower.slice(start, at - 1);
  if (CONDITION_WORDS.has(word) || PROSE_WORDS.has(word) || isTemplateNoun(word)) return at;
  return start;
}

/**
 * Where PROPER_NAME matches in `text`, as [start, end] pairs: read from each space, since every
 * match follows one (a search for a space costs less than the pattern tried at every place).
 * @internal Exported for tests; not part of the public API.
 */
export function properNames(text: string): [number, number][] {
  const found: [number, number][] = [];
  for (let space = text.indexOf(" ", 1); space >= 0; space = text.indexOf(" ", space + 1)) {
    const before = text.charCodeAt(space - 1);
    if (!((before >= 97 && before <= 122) || (before >= 48 && before <= 57) || before === 44)) {
      continue;
    }
    const first = text.charCodeAt(space + 1);
    if (first < 65 || first > 90) continue;
    let end = space + 2;
    if (isUpperCode(text.charCodeAt(end))) {
      // A word in capitals (`SELECT`, `INR`): three to twenty capitals and digits.
      while (end < text.length && end - space - 1 < 21 && isUpperOrDigit(text.charCodeAt(end)))
        end++;
      if (end - space - 1 < 3 || end - space - 1 > 20) continue;
    } else {
      while (end < text.length && end - space - 2 < 40 && isLowerCode(text.charCodeAt(end))) end++;
      if (end === space + 2) continue;
    }
    if (end < text.length && !PROPER_NAME_END.test(text.charAt(end))) continue;
    found.push([space + 1, end]);
  }
  return found;
}
const PROPER_NAME_END = /[\s.,;:!?)'"]/;

/** Whether `code` is in `[a-z]`. */
function isLowerCode(code: number): boolean {
  return code >= 97 && code <= 122;
}

/** Whether `code` is in `[A-Z]`. */
function isUpperCode(code: number): boolean {
  return code >= 65 && code <= 90;
}

/** Whether `code` is in `[A-Z0-9]`. */
function isUpperOrDigit(code: number): boolean {
  return isUpperCode(code) || (code >= 48 && code <= 57);
}
/**
 * The name of a month or a day, whole or cut short (`Mar`, `March`, `Tues`): not a word that
 * starts like one (`Marketing`, `Monitor`, `Sunset` are names).
 */
const CALENDAR_WORD =
  /^(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|thu(?:r|rs|rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)$/;
/** Words in capitals that belong to a message or a query, not to a call. */
const ACRONYMS = new Set(
  (
    "http https api apis url urls uri json xml yaml sql id ids uuid tls ssl dns tcp udp mcp oauth " +
    "jwt csv pdf html css aws gcp cli sdk ssh ftp smtp imap get post put patch delete head options " +
    "utf ascii rpc grpc rest llm ai gpu cpu ram os env gmt utc pst pdt est edt cst cdt mst mdt cet " +
    "cest bst ist jst " +
    // SQL's words: a query echoed in the text keeps its shape.
    "select from where insert into update set values join inner outer left right and not null " +
    "limit offset order group having union distinct count case when then else end like between " +
    "exists create drop alter table index view returning with asc desc true false"
  ).split(" "),
);
/** Capitalized words of a message's own prose (`Please`, `Error`, `The`). */
const PROSE_WORDS = new Set(
  "the a an and or of to in on for with please error see try check make use your you this that it is are was not no".split(
    " ",
  ),
);

/** A JSON string's escapes read once: `\"` is `"`, `\\` is `\`, `\n`, `\r`, `\t` are spaces. */
function unescapeJson(text: string): string {
  return text.replace(JSON_ESCAPE, (_m, c: string) =>
    c === "n" || c === "r" || c === "t" ? " " : c,
  );
}
const JSON_ESCAPE = /\\(["\\/nrt])/g;

/** What stands before a status in prose: a word of failure or answer, or a bracket. */
const STATUS_LEAD =
  /(?:\b(?:failed|failure|fails|errored|error|errors|responded|returned|rejected)(?: with)?(?: an?)?(?: http)?(?: status)?(?: code)?[ :([]{0,3}|\b(?:failed|failure|error|errors)\b[^.;\n]{0,40}[:([] ?|\b(?:status|code) (?:was|is|of) |<url> |^[([]|(?:^|[\s:])[([])$/;
/** What stands after a status in prose: `status`, a closing bracket, or the reason's words. */
const STATUS_TAIL =
  /^(?: ?(?:status|error|response)\b|[)\]]|:? (?:not found|forbidden|unauthori[sz]ed|bad request|conflict|gone|too many|internal|service unavailable|bad gateway|gateway timeout|unprocessable|payment required|precondition|request timeout|not acceptable|method not allowed|unavailable|timeout)\b)/;

/** What may follow a status after its lead: the end, punctuation, or a word that ends the phrase. */
const STATUS_END =
  /^(?:$|[\s]*[^\sa-z<]|\s(?:from|when|for|while|on|at|in|after|with|by|calling|fetching|requesting)\b)/;

/** Whether the number between `start` and `end` stands as an HTTP status in prose. */
function statusInProse(whole: string, start: number, end: number): boolean {
  const next = whole.charCodeAt(end);
  // Part of a longer number or a decimal (`404.5`, `4040`) is no status; a full stop after it
  // (`the status code is 401.`) ends its sentence.
  const afterDot = whole.charCodeAt(end + 1);
  if ((next === 46 && afterDot >= 48 && afterDot <= 57) || (next >= 48 && next <= 57)) return false;
  const after = whole.slice(end, end + 24);
  if (STATUS_TAIL.test(after)) return true;
  // A text that opens with its status: `404: {"message": …}`.
  if (start === 0 && next === 58) return true;
  // After a lead, only where the number ends a phrase (`failed with 404 from x`, `(500)`), not
  // where a noun follows it (`returned 404 rows`).
  return STATUS_LEAD.test(whole.slice(Math.max(0, start - 40), start)) && STATUS_END.test(after);
}

/** Modules that hold error classes. */
const ERROR_MODULES = new Set(["err", "errors", "error", "exc", "exceptions", "exception"]);
/** The end of the name of an error class. */
const ERROR_CLASS_END = /(?:error|exception|violation|warning|fault)s?$/;

function replaceDotted(m: RegExpExecArray): string {
  const match = m[0];
  let end = match.length;
  while (end > 0 && match.charAt(end - 1) === ".") end--;
  const name = match.slice(0, end);
  const labels = name.split(".");
  const last = labels[labels.length - 1] ?? "";
  if (labels.length < 2 || labels.some((l) => l === "") || !/^[a-z]{2,}$/.test(last)) return match;
  // A qualified error class (`pymysql.err.IntegrityError`, `botocore.exceptions.ClientError`,
  // `psycopg2.errors.UndefinedTable`) names the condition: no host.
  if (labels.some((l) => ERROR_MODULES.has(l)) || ERROR_CLASS_END.test(last)) return match;
  return `<host>${match.slice(end)}`;
}

/**
 * Normalizes failure text: removes what varies between occurrences of the same failure.
 *
 * Strips `MCP error -32xxx: ` prefixes (repeated ones too), reads JSON encoded in a JSON string
 * as JSON (`\"` as `"`, `\n` as a space) and lowercases, then replaces quoted
 * values, one-token values in square brackets, URLs, emails, `key=value` and `key = value`
 * values (the key stays), UUIDs, timestamps, dates and clock times, IPs, paths (a name with a
 * space included), host names, long tokens, hex ids, durations (Go's `1m30s` too), sizes and
 * numbers with placeholders (`<str>`, `<v>`, `<url>`, `<email>`, `<id>`, `<time>`, `<ip>`,
 * `<path>`, `<host>`, `<dur>`, `<size>`). Values that are words become `<v>`: a capitalized word
 * after a lowercase word inside a sentence (a proper name: `needs a Firecrawl account`; not error
 * vocabulary, a month, a day or a word of a path), snake_case and
 * kebab-case identifiers without error vocabulary (`customer_orders`, `orders-v2`), keys of
 * colons (`cache:user:42`), the value after `with name`, `named`, `by user`, `name =`, the
 * subject of `: x is not defined` / `does not exist` / `not found`, a short tail after
 * `not found:` or `unknown tool:` (and every echo of such a value), the host of
 * `getaddrinfo ENOTFOUND`. A comma-separated run of one placeholder reads as one, so lists of
 * different length match. Kept on purpose, since they tell conditions apart: JSON keys,
 * identifier values of condition keys (`code=not_found`, `"error": "rate_limited"`), upstream
 * messages in quotes after a message key (`"message": "…"`, `'reason': …`, `returned "…"`, with
 * their own values normalized) and quoted prose of error vocabulary after any key (`failed:
 * "Rate limit exceeded"`), a one-word message that names a condition (`"message": "Forbidden"`),
 * a number of 3 to 6 digits after a code or status key (`"code": 40301`, `errno=1045`), in
 * quotes too, letters before it or not (`"status": "404"`, `"code": "E1045"`), a 4xx or 5xx
 * status in prose (`failed with 404`, `API error (500)`, `a 404 status`, `failed to fetch: 404`,
 * `GET <url> 502`, a text opening with `404:`), identifiers with error vocabulary or written in capitals
 * (`index_not_found_exception`, `EAI_AGAIN`), HTTP-like statuses after `HTTP`/`status`, and short
 * digit runs inside words (`utf8`, `ipv4`). Whitespace is collapsed and the result is capped at
 * 500 characters. Work is bounded: only the first 4096 characters are read.
 *
 * @example
 * normalizeText('MCP error -32602: No note with id "drafts" (took 31ms)')
 * // → 'no note with id <str> (took <dur>)'
 */
export function normalizeText(text: string): string {
  return normalize(text.length > INPUT_CAP ? text.slice(0, INPUT_CAP) : text);
}

function normalize(head: string): string {
  let s = head;
  while (MCP_PREFIX.test(s)) s = s.replace(MCP_PREFIX, "");
  // JSON inside a JSON string (`"{\"error\": …}"`) reads as JSON, and its escaped line breaks
  // as breaks: one body, encoded once or twice, normalizes the same.
  if (s.includes('\\"')) s = unescapeJson(s);
  const original = s;
  s = s.toLowerCase();
  // Offsets of the original are the lowercased text's where lowercasing kept its length.
  if (s.length === original.length) s = replaceProperNames(original, s);
  // Each pass below is skipped when the text lacks something every change it makes needs: the
  // same result, sooner. No pass adds a digit, `.`, `:` or `-` (placeholders are `<`, `>` and
  // letters), so what the text lacks now it lacks at every later pass; a flag is read again where
  // the passes before may have taken the last of its characters (into a `<url>`, an `<id>`).
  let digits = HAS_DIGIT.test(s);
  let dots = s.includes(".");
  let colons = s.includes(":");
  const hyphens = s.includes("-");
  // Quoted values first: whatever is inside cannot then be read by another rule.
  if (hasOpeningQuote(s)) s = replaceEach(s, QUOTED, quotedMatch);
  // One-token values in brackets (`no such index [logs-app]`), lists and paths included.
  if (s.includes("[")) s = replaceAnchored(s, BRACKETED, "[", 0, replaceBracketed);
  // A URL's scheme ends at most 31 characters after its start, where `://` follows.
  s = replaceAnchored(s, URL_LIKE, "://", 31, urlPlaceholder);
  if (s.includes("@")) s = s.replace(EMAIL, "<email>");
  if (s.includes("=")) {
    s = replaceEach(s, KEY_VALUE, replaceKeyValue);
    if (s.includes(" = "))
      s = replaceAnchored(s, SPACED_KEY_VALUE, " = ", 64, replaceSpacedKeyValue);
  }
  // A UUID has a `-` 8 characters after its start, a date 4: only the places where a `-` is are read.
  if (hyphens) s = replaceAnchored(s, UUID_AT, "-", 8, idPlaceholder);
  digits &&= HAS_DIGIT.test(s);
  if (digits) {
    if (hyphens) s = replaceAnchored(s, ISO_TIMESTAMP_AT, "-", 4, timePlaceholder);
    if (MONTH_HINT.test(s)) {
      if (DAY_MONTH_HINT.test(s)) s = s.replace(DAY_MONTH_YEAR, "<time>");
      if (MONTH_DAY_HINT.test(s)) s = s.replace(MONTH_DAY_YEAR, "<time>");
    }
    // IPv4 before clock times (`0.0.0.0:10` is an address and a port), IPv6 after them.
    if (dots) s = s.replace(IPV4, "<ip>");
    if (colons) s = s.replace(CLOCK_TIME, "<time>");
  }
  colons &&= s.includes(":");
  if (colons && hasIpv6Hint(s)) s = replaceEach(s, IPV6, replaceIpv6);
  if (colons && (s.includes(":\\") || s.includes(":/"))) s = s.replace(WINDOWS_PATH, "<path>");
  if (s.includes("\\\\")) s = s.replace(UNC_PATH, "<path>");
  if (s.includes("/")) s = s.replace(POSIX_PATH, "<path>");
  // A path goes on past a space in a name (`/a/Quarterly Report.xlsx`) and past a placeholder.
  if (s.includes("<path>")) s = replaceAnchored(s, PATH_TAIL, "<path>", 0, pathPlaceholder);
  // A relative path, once absolute ones and their tails are read (`/a/li wei/x` is one path).
  if (s.includes("/")) s = s.replace(RELATIVE_PATH, "<path>");
  if (s.includes("getaddrinfo ")) s = s.replace(NOT_FOUND_HOST, "getaddrinfo $1 <host>");
  // A host name ends in a label of two letters or more, after a dot.
  dots &&= s.includes(".");
  if (dots && hasHostHint(s)) s = replaceEach(s, DOTTED, replaceDotted);
  // Values that are words: named (`with name x`), a subject (`: x is not defined`), a tail
  // (`not found: x`), identifiers without error vocabulary, and keys of colons.
  // Each lead holds `name` or `user`, each phrase `not ` (WORD_VALUE_HINTS): most texts hold
  // neither, and a search for one word is cheaper than the pattern of all.
  const naming = holdsHint(s, NAMING_HINT);
  const colonSpace = s.includes(": ");
  // A subject ends at most 62 characters before the ` not ` of its phrase.
  const subject = colonSpace && holdsHint(s, SUBJECT_HINT);
  const tail = colonSpace && TAIL_LEADS.test(s);
  if (naming || subject || tail) {
    const seen: string[] = [];
    const words = wordValueReplacers(seen);
    if (naming) s = s.replace(NAMED, words.named);
    if (subject) s = replaceAnchored(s, SUBJECT, " not ", 70, words.subject);
    if (tail) s = replaceAnchored(s, NAMED_TAIL, ": ", 32, words.tail);
    if (seen.length > 0) s = replaceEchoes(s, seen);
  }
  if ((hyphens && s.includes("-")) || s.includes("_")) s = replaceIdentifiers(s, original);
  if (colons && hasJoin(s, ALNUM_CHARS, ":", COLON_KEY_CHARS)) s = s.replace(COLON_KEY, "<v>");
  digits &&= HAS_DIGIT.test(s);
  if (digits) {
    // A long token or a hex id is a whole run of its characters, replaced when it mixes digits
    // and letters.
    if (hasRun(s, TOKEN_CHARS, 16, mixesDigitsAndLetters)) {
      s = replaceEach(s, LONG_TOKEN, replaceLongToken);
    }
    // Hex ids before durations: `000000d` is an id, not days.
    // (Digit-only runs are left to the duration and number rules, which give them the same `<id>`.)
    if (hasRun(s, HEX_CHARS, 7, mixesDigitsAndLetters)) {
      s = replaceEach(s, HEX_ID, replaceHexId);
    }
    s = replaceEach(s, DURATION_OR_SIZE, durationOrSize);
    s = s.replace(DURATION, "<dur>");
    s = replaceEach(s, NUMBER, replaceNumber);
  }
  if (s.includes(">,")) s = s.replace(PLACEHOLDER_LIST, "$1");
  s = collapseSpaces(s);
  s = s.trim();
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
  /**
   * The arguments the model sent, when known: a word of the text that is one of their values is
   * the model's own value, not part of the condition (`table orders not found` for
   * `{ table: "orders" }` shares its fingerprint with `table invoices not found` for
   * `{ table: "invoices" }`). Without them, only the text's shape says what a value is.
   */
  readonly args?: Readonly<Record<string, unknown>>;
}

/**
 * A stable 16-char lowercase hex hash (sha256, truncated) of (tool, channel, code, normalized
 * text). Two failures that differ only in ids, numbers, paths, quoted values and the like share
 * it; a different tool, channel, code or message template does not. Stable across processes and
 * versions of Node (the hashed form is a JSON array). The normalized text is hashed with its
 * values folded (fingerprint-fold.ts): every placeholder counts as one, and bare words are values
 * where the text announces one (`tool: x`, `not in a, b`, `calling the X operation`), so a name
 * written as a word in one occurrence and as a slug, a list or a path in the next still matches.
 *
 * @example
 * fingerprint({ tool: "get_note", channel: "tool", text: 'no note with id "drafts"' })
 * // same as for 'no note with id "inbox"'
 */
export function fingerprint(input: FingerprintInput): string {
  return fingerprintOf(input.tool, input.channel, input.code, input.text, input.args);
}

/** An ellipsis a server cuts an echoed value with. */
const ELLIPSIS = /\.\.\.|…/g;
/** The least of a value a cut echo must keep to be read as that value. */
const MIN_CUT_ECHO = 8;
/** At most this many ellipses of a text are read (bounded work on any text). */
const MAX_CUT_ECHOES = 8;

/**
 * The text with each echo of a call's value that the server cut short (`title Quarterly revenue
 * summary for the nor... exceeds 40 characters`) written out whole, lower-cased: the fold then
 * reads it as the value it is, whatever the model sent. Only a cut of {@link MIN_CUT_ECHO}
 * characters or more that starts the value, at the start of a word, right before the ellipsis.
 */
function expandCutEchoes(text: string, values: readonly string[]): string {
  if (!text.includes("...") && !text.includes("…")) return text;
  // The fold reads values of at most 120 characters: a longer one is not looked for.
  const long = values.filter((v) => v.length > MIN_CUT_ECHO && v.length <= 120);
  if (long.length === 0) return text;
  let out = "";
  let copied = 0;
  let looked = 0;
  for (const m of text.matchAll(ELLIPSIS)) {
    if (++looked > MAX_CUT_ECHOES) break;
    const at = m.index;
    const whole = cutValueAt(text, at, copied, long);
    if (whole === undefined) continue;
    out += `${text.slice(copied, at - whole.kept)}${whole.value}`;
    copied = at + m[0].length;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** The value whose first characters end at `at` (an ellipsis), and how many of them the text kept. */
function cutValueAt(
  text: string,
  at: number,
  from: number,
  values: readonly string[],
): { value: string; kept: number } | undefined {
  for (const value of values) {
    for (let kept = Math.min(value.length - 1, at - from); kept >= MIN_CUT_ECHO; kept--) {
      const start = at - kept;
      if (text.charAt(start).toLowerCase() !== value.charAt(0)) continue;
      if (start > 0 && WORD_CHAR.test(text.charAt(start - 1))) continue;
      if (text.slice(start, at).toLowerCase() === value.slice(0, kept)) return { value, kept };
    }
  }
  return undefined;
}
const WORD_CHAR = /[\p{L}\p{N}_]/u;

/** At most this many objects or lists of the arguments are looked for as JSON. */
const MAX_JSON_VALUES = 8;
/** A JSON text longer than this is not looked for (the fold reads values of 120 at most). */
const MAX_JSON_LENGTH = 240;

/** The objects and lists among the call's arguments (top level), as JSON in two spacings. */
function jsonValues(args: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  for (const value of Object.values(args)) {
    if (out.length >= MAX_JSON_VALUES * 2) break;
    if (typeof value !== "object" || value === null) continue;
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      continue;
    }
    if (json === undefined || json.length > MAX_JSON_LENGTH) continue;
    const lower = json.toLowerCase();
    out.push(lower, lower.replace(/([,:])(?=["[{\d-]|true|false|null)/g, "$1 "));
  }
  return out;
}

const PLACEHOLDERS = /<[a-z]+>/g;
const OWN_LETTER = /\p{L}/u;

/**
 * The call's argument values as the text may hold them: each as sent (lower-cased) and, when the
 * normalizer changes it (`abc123XYZ` reads `abc<id>xyz`), as normalized, so a value echoed
 * verbatim is found in the normalized text whatever its digits.
 * A value with spaces is looked for URL-encoded too (`hello%20world`, `hello+world`). An object or
 * a list the call sent is looked for as JSON too, as JavaScript and Python write it
 * (`{"region":"eu"}`, `{"region": "eu"}`): a server that echoes it echoes the model's keys.
 */
function asNormalized(
  values: readonly string[],
  args: Readonly<Record<string, unknown>>,
  lowerHead: string,
): readonly string[] {
  const forms: string[] = [];
  // A form is made only when the text holds its mark: most failure texts hold none of them.
  const encoded = lowerHead.includes("%") || lowerHead.includes("+");
  for (const value of values) {
    // Spaces the model put around a value are not part of what the text echoes.
    const trimmed = value.trim();
    if (trimmed !== value && trimmed !== "") forms.push(trimmed);
    // A server that echoes it in a URL's encoding (`hello%20world`, a form's `hello+world`).
    if (encoded && value.includes(" ") && value.length <= 120) {
      forms.push(value.replaceAll(" ", "+"));
      forms.push(encodeURIComponent(value).toLowerCase());
    }
  }
  if (lowerHead.includes("{") || lowerHead.includes("[")) forms.push(...jsonValues(args));
  // Each form once, in the order first met (a Set: up to a few hundred values and forms).
  const out = new Set(values);
  for (const value of [...values, ...forms]) {
    out.add(value);
    // Its normalized form is looked for only when the text echoes it verbatim (the normalizer is
    // the costly part: most of a call's values are not in its failure text).
    if (!lowerHead.includes(value)) continue;
    const n = normalize(value);
    // Only a value that keeps letters of its own: a bare placeholder is the normalizer's already.
    if (n !== value && n.includes("<") && OWN_LETTER.test(n.replace(PLACEHOLDERS, ""))) {
      out.add(n);
    }
  }
  return [...out];
}

/**
 * {@link fingerprint} of its parts, for a caller that has them apart (no input object made).
 * @internal
 */
export function fingerprintOf(
  tool: string,
  channel: Channel,
  inputCode: number | string | undefined,
  text: string,
  args?: Readonly<Record<string, unknown>>,
): string {
  const code = inputCode ?? null;
  const cut = text.length > INPUT_CAP ? text.slice(0, INPUT_CAP) : text;
  const values = args === undefined ? undefined : argumentValues(args);
  const head = values === undefined ? cut : expandCutEchoes(cut, values);
  let normalized = normalize(head);
  if (values !== undefined && args !== undefined) {
    normalized = foldArgumentValues(normalized, asNormalized(values, args, head.toLowerCase()));
  }
  // A code the text writes in capitals (`QUEUE_FULL`) is the condition, not a value to fold.
  const codes = identifiersInCapitals(head);
  const camels = CAMEL_HINT.test(head) ? camelIdentifiers(head) : undefined;
  const folded = foldValues(normalized, codes.size > 0 ? codes : undefined, camels);
  return sha256Hex(JSON.stringify([tool, channel, code, folded])).slice(0, 16);
}
