/**
 * Values of the call's own arguments echoed in its failure text (issue 27.3). A search for
 * `unauthorized` that found nothing is not a 401, a filter on status `503` that matched no run is
 * not an outage: the words the model sent itself say nothing of what failed. Before the text rules
 * and the learned model read a text, each echo is replaced with `…`. Pure and bounded.
 */

/** How much of the arguments is looked at: bounded whatever a caller sends. */
const MAX_VALUES = 100;
const MAX_DEPTH = 6;
/** An unquoted echo must be at least this long to be masked: short words are the text's own too. */
const MIN_BARE = 6;
/** A number echoed (`status 503`): three digits or more. */
const NUMBER = /^\d{3,}$/;
const MASK = "…";

/** How many values (strings, numbers, arrays, objects) are read at most, shared ones each time. */
const MAX_READS = 1_000;

/** How a value or a text is lower-cased before one is looked for in the other. */
type Lower = (s: string) => string;

const toLower: Lower = (s) => s.toLowerCase();

/**
 * `s` lower-cased character by character into as many UTF-16 units as it has, so that an index
 * found in it is the same index in `s`. `toLowerCase` writes `İ` as two (`i` and a combining dot):
 * here it is `i`, the first of them.
 */
function lowerSameLength(s: string): string {
  const lower = s.toLowerCase();
  if (lower.length === s.length) return lower;
  let out = "";
  for (const ch of s) {
    const l = ch.toLowerCase();
    out += l.length === ch.length ? l : l.slice(0, ch.length);
  }
  return out;
}

/** The values of `value` worth looking for, read depth-first until a bound is reached. */
function collect(
  out: Set<string>,
  value: unknown,
  depth: number,
  reads: { left: number },
  lower: Lower,
): void {
  if (out.size >= MAX_VALUES || depth > MAX_DEPTH || reads.left <= 0) return;
  reads.left--;
  if (typeof value === "string") {
    const v = value.trim();
    // Lower-cased, once: a value the call sends many times is looked for once.
    if (v.length >= 2 && v.length <= 500) out.add(lower(v));
  } else if (typeof value === "number" && Number.isInteger(value) && value >= 100) {
    out.add(String(value));
  } else if (depth >= MAX_DEPTH) {
    // Its items would not be looked at: they are not read either (a getter runs on a read).
  } else if (Array.isArray(value)) {
    for (const item of value) {
      if (out.size >= MAX_VALUES || reads.left <= 0) return;
      collect(out, item, depth + 1, reads, lower);
    }
  } else if (typeof value === "object" && value !== null) {
    for (const key in value) {
      if (out.size >= MAX_VALUES || reads.left <= 0) return;
      if (Object.hasOwn(value, key))
        collect(out, (value as Record<string, unknown>)[key], depth + 1, reads, lower);
    }
  }
}

/**
 * How an HTTP client reports the status of the response (`Request failed with status code 401`,
 * `HTTP/1.1 401`, `Response code 401`): the number after it is the server's answer, whatever the
 * call sent.
 */
const RESPONSE_STATUS = /(?:\bhttp(?:\/[\d.]+)?|\bstatus code|\bresponse code)\s*[:=]?\s*$/i;
/** Whether a masked text still says something of its own (a letter or digit outside the masks). */
const SAYS_SOMETHING = /[\p{L}\p{N}]/u;

const isWord = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}_]/u.test(c);
const QUOTES = "'\"`[(";
const CLOSING: Record<string, string> = { "'": "'", '"': '"', "`": "`", "[": "]", "(": ")" };

/**
 * The text with each echo of an argument value replaced by `…`: a value of six characters or
 * more, a number of three digits or more, or any value of two or more the text quotes or brackets
 * (`'pod-a'`, `[logs]`). Whole tokens only (`unauthorized` in `unauthorizedAccess` stays), case
 * insensitive. Not masked: a number an HTTP client gives as the response's status (`status code
 * 401`), and a text that would be left with no word of its own. The text itself when nothing is
 * echoed.
 */
export function maskArgumentEchoes(text: string, args: Readonly<Record<string, unknown>>): string {
  const found = new Set<string>();
  // Both lower-cased unit for unit: an index found in the lower-cased text is the text's own.
  collect(found, args, -1, { left: MAX_READS }, lowerSameLength);
  if (found.size === 0) return text;
  // Longest first: a value inside another is masked with it.
  const values = [...found].sort((a, b) => b.length - a.length);
  let out = text;
  for (const value of values) {
    const lower = lowerSameLength(out);
    const needle = value;
    let from = 0;
    let masked = "";
    let copied = 0;
    for (;;) {
      const at = lower.indexOf(needle, from);
      if (at < 0) break;
      const end = at + needle.length;
      from = end;
      const before = out[at - 1];
      const after = out[end];
      if (isWord(before) && isWord(needle[0])) continue;
      if (isWord(after) && isWord(needle[needle.length - 1])) continue;
      const quoted = before !== undefined && QUOTES.includes(before) && after === CLOSING[before];
      const number = NUMBER.test(needle);
      if (!quoted && !number && needle.length < MIN_BARE) continue;
      if (number && !quoted && RESPONSE_STATUS.test(out.slice(Math.max(0, at - 24), at))) continue;
      masked += out.slice(copied, at) + MASK;
      copied = end;
    }
    if (copied > 0) out = masked + out.slice(copied);
  }
  // A text that is nothing but the values (`Unauthorized` for a search of "unauthorized") is the
  // server's own answer: no sentence around it says the value is one the call sent.
  return out === text || SAYS_SOMETHING.test(out) ? out : text;
}

/**
 * The values of the call's arguments worth looking for in its failure text, lower-cased: strings
 * of two characters or more and integers of 100 or more, read depth-first within the same bounds
 * as {@link maskArgumentEchoes}.
 */
export function argumentValues(args: Readonly<Record<string, unknown>>): readonly string[] {
  const found = new Set<string>();
  collect(found, args, -1, { left: MAX_READS }, toLower);
  return [...found];
}
