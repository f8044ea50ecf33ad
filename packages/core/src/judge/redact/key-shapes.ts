/**
 * Keys known by their shape alone, with no name or prefix: PEM blocks, `0x` and hex, long runs of
 * mixed-case letters and digits (or of hex), AWS secret access keys (40 base64 characters), Azure
 * AD client secrets (`…8Q~…`), Google Cloud Storage HMAC access ids (`GOOG1…`), and HTTP Basic
 * credentials (`Basic ` and the base64 of `user:password`) wherever they stand, and the trace and
 * span ids of a W3C `traceparent` (`00-<32 hex>-<16 hex>-01`).
 */
import { TOKEN } from "./placeholders.ts";
import type { SecretGroup } from "./rule.ts";
import { charTable, hasRun } from "./scan.ts";

/** A PEM block, or a BEGIN line with no END: everything to the end of the input. */
export const PEM_BLOCK =
  /-----BEGIN [A-Z0-9 ]{1,64}-----[\s\S]*?(?:-----END [A-Z0-9 ]{1,64}-----|$)/g;

/**
 * A long base64/alphanumeric run with mixed case and digits, or a long hex run of letters and
 * digits (an unlabelled hex key, an internal trace id): almost always a secret or an internal id.
 */
function redactHighEntropy(match: string): string {
  // A hex tail after `=` is not read: the run and its `=` are, as {@link hasKeyRun} reads them.
  const eq = match.indexOf("=");
  return isKeyRun(match, 0, eq >= 0 && match.length - eq === 9 ? eq + 1 : match.length)
    ? TOKEN
    : match;
}

/**
 * Whether a run reads as a token: as a whole, or from after its last `_` or `-` when 32 characters
 * or more follow it (a vendor's prefix before a hex key, `dop_v1_<hex>`, `sbp_<hex>`,
 * `pul-<hex>`, makes the whole run read as words).
 */
function isKeyRun(text: string, start: number, end: number): boolean {
  if (isHighEntropy(text, start, end)) return true;
  let cut = end;
  while (cut > start && text.charCodeAt(cut - 1) !== 95 && text.charCodeAt(cut - 1) !== 45) cut--;
  return cut > start && end - cut >= 32 && isHighEntropy(text, cut, end);
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
  return isKeyRun(text, start, stop);
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

/**
 * `Basic <base64>` whose base64 decodes to `user:password` in printable ASCII: HTTP Basic
 * credentials outside an `Authorization` header (a JSON field, a log line). "Basic usage" and
 * "Basic authentication" decode to nothing of the kind.
 */
function redactBasicCredentials(
  match: string,
  word: unknown,
  space: unknown,
  value: unknown,
): string {
  if (typeof value !== "string" || value.length % 4 !== 0) return match;
  const decoded = Buffer.from(value, "base64").toString("latin1");
  if (!/^[\x20-\x7e]+$/.test(decoded) || decoded.indexOf(":") < 1) return match;
  return `${String(word)}${String(space)}${TOKEN}`;
}

/**
 * Whether a W3C trace context may be there: a `-` with two more 33 and 50 characters after it, as
 * in every match of `00-<32 hex>-<16 hex>-01` (the `-` after the version, the trace id and the
 * span id). One pass over the `-` of the text.
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldTraceparent(text: string): boolean {
  for (let at = text.indexOf("-"); at >= 0; at = text.indexOf("-", at + 1)) {
    if (text.charCodeAt(at + 33) === 45 && text.charCodeAt(at + 50) === 45) return true;
  }
  return false;
}

/** Unlabelled keys, after the named ones (a named value is redacted whole first). */
export const KEY_SHAPE_RULES: SecretGroup = {
  may: () => true,
  rules: [
    // A W3C `traceparent` value (`traceparent: 00-4bf9…4736-00f0…02b7-01`, in a header, after
    // `=` or in JSON): its trace id and span id are internal ids; the version and flags stay. The
    // long-key rule below reads the whole value as one run with `-` in it and keeps it.
    [
      /(?<![\w-])([0-9a-fA-F]{2})-[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-([0-9a-fA-F]{2})(?![\w-])/g,
      `$1-${TOKEN}-${TOKEN}-$2`,
      mayHoldTraceparent,
    ],
    // A private key or hash as `0x` and hex.
    [/(?<![\w])0x[0-9a-fA-F]{32,}/g, TOKEN, (text) => text.includes("0x")],
    // After `=` too: `NAME=<key>` whatever the name. A key may end in `=` and eight upper-case
    // hex characters (Atlassian's `ATATT3…=4E1A9C7B`), which stayed.
    [
      /(?<![A-Za-z0-9+_-])[A-Za-z0-9+_-]{32,}(?:=[0-9A-F]{8}(?![A-Za-z0-9+_-])|={0,2})/g,
      redactHighEntropy,
      hasKeyRun,
    ],
    // An Azure AD client secret: three characters, a digit, `Q~`, then 31 to 34 more.
    [/(?<![\w~.-])[\w~.-]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])/g, TOKEN, (text) => text.includes("Q~")],
    // A Google Cloud Storage HMAC access id (an interoperability key): upper case and digits.
    [/(?<![A-Za-z0-9])GOOG1[A-Z0-9]{20,}(?![A-Za-z0-9])/g, TOKEN, (text) => text.includes("GOOG1")],
    // `Basic` or `basic` (the scheme's spellings): one search for `asic`, not a search in either case.
    [
      /(?<![\w-])([Bb]asic)(\s+)([A-Za-z0-9+/]{4,}={0,2})(?![\w+/=-])/g,
      redactBasicCredentials,
      (text) => text.includes("asic"),
    ],
    // An AWS secret access key without its label: exactly 40 base64 characters with a `/` or
    // `+` in them (the rule above stops at `/`), mixed case and digits.
    [
      /(?<![A-Za-z0-9+/=_.-])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=_.-])/g,
      redactAwsSecret,
      hasAwsSecretRun,
    ],
  ],
};
