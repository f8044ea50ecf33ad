/**
 * Secrets and paths written with escapes: JSON string escapes (`\"`, `\/`, `\u0070`), `\x3d`,
 * percent-encoding (`%2F`, `password%3Dhunter2`) and HTML entities of ASCII characters (`&quot;`,
 * `&#34;`, `&#x2F;`: a server that quotes an HTML error page), up to three layers deep (JSON inside
 * JSON, a value encoded twice). No pattern reads `password\u003dhunter2` or `%2Fhome%2Falice` as what it
 * is, so a text that holds an escape is also read decoded: what redaction replaces in the decoded
 * text is replaced in the text as written, over the whole escapes it came from. The text keeps its
 * form (a UNC path's `\\`, a JSON string's quoting) and the model gets the same placeholders.
 *
 * Only a text that holds an escape pays: {@link mayHoldEscape} is three searches for `\`, `%` and
 * `&`.
 */
import { INVISIBLE_CHARS } from "./hygiene.ts";
import { isAsciiLetter, isWordCode } from "./scan.ts";

/** `0`-`9`, `a`-`f`, `A`-`F`: the value of a hex digit, or -1. */
function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/** The value of `count` hex digits at `at`, or -1. */
function hexAt(text: string, at: number, count: number): number {
  if (at + count > text.length) return -1;
  let value = 0;
  for (let i = 0; i < count; i++) {
    const digit = hexValue(text.charCodeAt(at + i));
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

/** The named HTML entities of the ASCII characters a secret or a path is written with. */
const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  quot: '"',
  apos: "'",
  amp: "&",
  lt: "<",
  gt: ">",
  sol: "/",
  colon: ":",
  equals: "=",
};

/** The longest entity {@link entityAt} reads: `&equals;`, `&#x0002F;`. */
const MAX_ENTITY_LENGTH = 9;

/**
 * The HTML entity at `at` (an `&`) decoded and its length, when it is one of
 * {@link NAMED_ENTITIES} or a numeric one (`&#34;`, `&#x22;`) of an ASCII character; a length of
 * 0 otherwise.
 */
function entityAt(text: string, at: number): [string, number] {
  // The `;` within reach, not the next one anywhere: a URL's `&` has none.
  let end = at + 2;
  while (end - at <= MAX_ENTITY_LENGTH && end < text.length && text.charCodeAt(end) !== 59) end++;
  if (text.charCodeAt(end) !== 59 || end - at > MAX_ENTITY_LENGTH) return ["", 0];
  const body = text.slice(at + 1, end);
  const named = NAMED_ENTITIES[body];
  if (named !== undefined) return [named, end - at + 1];
  let value = -1;
  if (/^#[0-9]{1,5}$/.test(body)) value = Number(body.slice(1));
  else if (/^#[xX][0-9A-Fa-f]{1,5}$/.test(body)) value = Number.parseInt(body.slice(2), 16);
  return value >= 0 && value < 128 ? [clean(String.fromCharCode(value)), end - at + 1] : ["", 0];
}

/** The longest run {@link inWindowsPath} reads back: a Windows path's usual limit. */
const MAX_PATH_BACK = 260;

/**
 * Whether the `\` at `at` is a separator of a Windows path as written (`C:\Users\bob\notes`,
 * `\\server\share\new`): the run of characters before it, up to whitespace or a quote, holds a
 * drive (`C:\`) or starts with `\\`. There `\n`, `\r` and `\t` start a name, not a break, and
 * {@link markJsonBreaks} leaves them alone.
 */
function inWindowsPath(text: string, at: number): boolean {
  let start = at;
  while (start > 0 && at - start < MAX_PATH_BACK) {
    const code = text.charCodeAt(start - 1);
    if (isBreakOrQuote(code)) break;
    start--;
  }
  // A drive: one letter alone before `:\` (`C:\`, not the `]:\n` of `[running]:\n`).
  for (let i = start + 2; i < at; i++) {
    if (text.charCodeAt(i) !== 92 || text.charCodeAt(i - 1) !== 58) continue;
    if (isAsciiLetter(text.charCodeAt(i - 2)) && !isWordCode(text.charCodeAt(i - 3))) return true;
  }
  return text.charCodeAt(start) === 92 && text.charCodeAt(start + 1) === 92;
}

function isBreakOrQuote(code: number): boolean {
  return code <= 32 || code === 34 || code === 39 || code === 96;
}

/**
 * Whether the `\n`, `\r` or `\t` at `at` has something glued after it (not whitespace, not
 * another escape) and is no separator of a Windows path.
 */
function gluedBreak(text: string, at: number): boolean {
  const after = text.charCodeAt(at + 2);
  if (Number.isNaN(after) || after <= 32 || after === 92) return false;
  return !inWindowsPath(text, at);
}

/** What {@link markJsonBreaks} puts after a break; sanitizing leaves no control character in a text. */
export const BREAK_MARK = "\u0001";

/**
 * The text with a mark after each JSON `\n`, `\r` and `\t` (at any depth: `\\n` too) glued to
 * what follows, outside Windows paths. As written, the `n` or `t` reads as the end of a word, and
 * every rule that wants none before its match (a path, an IP, an AWS key id, a JWT, a flag) misses
 * what starts the next line: `{"error":"bad config\n/home/alice/.env"}`. After the mark, which
 * no rule takes for a word, it starts a line as a real break would; the caller removes the marks
 * once the text is redacted. Cheaper than reading the text decoded: one pass, no second reading.
 */
export function markJsonBreaks(text: string): string {
  let out = "";
  let copied = 0;
  for (let at = text.indexOf("\\"); at >= 0; at = text.indexOf("\\", at + 1)) {
    const next = text.charCodeAt(at + 1);
    if ((next === 110 || next === 114 || next === 116) && gluedBreak(text, at)) {
      out += text.slice(copied, at + 2) + BREAK_MARK;
      copied = at + 2;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Whether an escape that can hide what redaction looks for starts at `at` (a `\`, a `%` or an
 * `&`): `\"`, `\'`, `\/`, `\uXXXX`, `\xNN`, `%NN` of an ASCII character, or an HTML entity of
 * {@link entityAt}. `\n` and `\\` alone hide nothing (a Windows path is read with its `\\`; what a
 * `\n` is glued to is read after a mark, see {@link markJsonBreaks}).
 */
function escapeAt(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  const next = text.charCodeAt(at + 1);
  if (code === 37) return hexAt(text, at + 1, 2) >= 0 && hexValue(next) < 8; // "%"
  if (code === 38) return entityAt(text, at)[1] > 0; // "&"
  if (next === 34 || next === 39 || next === 47) return true; // \" \' \/
  if (next === 117) return hexAt(text, at + 2, 4) >= 0; // \u
  if (next === 120) return hexAt(text, at + 2, 2) >= 0; // \x
  return false;
}

/**
 * Whether the text holds an escape {@link redactEscaped} decodes (a text without one comes back
 * from it unchanged). Most texts hold neither `\` nor `%`: two searches.
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldEscape(text: string): boolean {
  return escapesIn(text) !== NO_ESCAPE;
}

/**
 * Whether the text holds a `\uXXXX`, `\xNN` or `\/` escape: one that can sit inside a key or a
 * password as written (`sk-proj-ABC\u0044EF…`), cutting it in two for the patterns that read the
 * text as written. `\"` and `\'` end a value as its quotes do; `%NN` is read inside URLs already.
 */
export function holdsCharEscape(text: string): boolean {
  for (let at = text.indexOf("\\"); at >= 0; at = text.indexOf("\\", at + 1)) {
    const next = text.charCodeAt(at + 1);
    if ((next === 117 || next === 120 || next === 47) && escapeAt(text, at)) return true;
  }
  return false;
}

const NO_ESCAPE = 0;
/** Only `\"` and `\'`: the decoded text differs from the text in its quoting alone. */
const QUOTES_ONLY = 1;
const OTHER_ESCAPES = 2;

/** Which escapes the text holds: none, quotes only, or others. */
function escapesIn(text: string): number {
  let found = NO_ESCAPE;
  for (let at = text.indexOf("\\"); at >= 0; at = text.indexOf("\\", at + 1)) {
    if (!escapeAt(text, at)) continue;
    const next = text.charCodeAt(at + 1);
    if (next !== 34 && next !== 39) return OTHER_ESCAPES;
    found = QUOTES_ONLY;
  }
  for (let at = text.indexOf("%"); at >= 0; at = text.indexOf("%", at + 1)) {
    if (escapeAt(text, at)) return OTHER_ESCAPES;
  }
  for (let at = text.indexOf("&"); at >= 0; at = text.indexOf("&", at + 1)) {
    if (escapeAt(text, at)) return OTHER_ESCAPES;
  }
  return found;
}

/**
 * A decoded text and, for each of its characters, where it starts in the text it was decoded from
 * (`starts[decoded.length]` is that text's length): decoded characters `a` to `b` come from
 * `from.slice(starts[a], starts[b])`.
 */
interface Decoded {
  readonly text: string;
  readonly starts: Int32Array;
}

/** What a decoded character becomes: itself, a space (a control character) or nothing. */
function clean(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 32 || code === 127) return " ";
  if (code < 0x80) return char;
  INVISIBLE_CHARS.lastIndex = 0;
  return INVISIBLE_CHARS.test(char) ? "" : char;
}

/**
 * The next `\\`, `%` or `&` of a text, from a position on: the next of each kind is kept until
 * passed (searching again for a kind the text lacks would read the rest of the text at every
 * escape, and a JSON error holds hundreds).
 */
class EscapeChars {
  private readonly next = [-2, -2, -2];
  constructor(private readonly text: string) {}

  /** The first `\\`, `%` or `&` at `from` or after, or the text's length. */
  from(from: number): number {
    let at = this.text.length;
    for (let k = 0; k < 3; k++) {
      let found = this.next[k] as number;
      if (found !== -1 && found < from) {
        found = this.text.indexOf(ESCAPE_CHARS[k] as string, from);
        this.next[k] = found;
      }
      if (found >= 0 && found < at) at = found;
    }
    return at;
  }
}

const ESCAPE_CHARS = ["\\", "%", "&"];

/**
 * One layer of escapes decoded: `\"` `\'` `\/` `\\` as the character, `\n` `\r` `\t` `\b` `\f`
 * as a space, `\uXXXX` (a surrogate only in a pair) and `\xNN` as their character, `%NN` and an
 * HTML entity of an ASCII character as it. A decoded control character becomes a space and an invisible mark
 * nothing, as sanitizing the text does. The text between escapes is copied a run at a time.
 */
function decodeLayer(text: string): Decoded | undefined {
  // The decoded text is never longer than the text.
  const starts = new Int32Array(text.length + 1);
  let out = "";
  let written = 0;
  // Where the next character written starts: an escape that decodes to nothing joins it.
  let pending = -1;
  let changed = false;
  const escapeChars = new EscapeChars(text);
  let i = 0;
  while (i < text.length) {
    const next = escapeChars.from(i);
    if (next > i) {
      out += text.slice(i, next);
      starts[written++] = pending >= 0 ? pending : i;
      pending = -1;
      for (let k = i + 1; k < next; k++) starts[written++] = k;
      i = next;
      if (i >= text.length) break;
    }
    const [char, length] =
      escapeAt(text, i) || text.charCodeAt(i) === 92 ? decodeAt(text, i) : ["", 0];
    if (length === 0) {
      // Not an escape: the character itself.
      out += text.charAt(i);
      starts[written++] = pending >= 0 ? pending : i;
      pending = -1;
      i++;
      continue;
    }
    changed = true;
    const at = pending >= 0 ? pending : i;
    pending = -1;
    if (char === "") pending = at;
    // Each character of a pair decoded together starts where the pair does.
    for (let k = 0; k < char.length; k++) starts[written++] = at;
    out += char;
    i += length;
  }
  if (!changed) return undefined;
  starts[written] = text.length;
  return { text: out, starts: starts.subarray(0, written + 1) };
}

/**
 * The escape at `at` (a `\\` or a `%`) decoded, and its length; a length of 0 when it is not one
 * this decodes.
 */
function decodeAt(text: string, at: number): [string, number] {
  if (text.charCodeAt(at) === 37) return [clean(String.fromCharCode(hexAt(text, at + 1, 2))), 3];
  if (text.charCodeAt(at) === 38) return entityAt(text, at);
  const next = text.charAt(at + 1);
  if (next === '"' || next === "'" || next === "/" || next === "\\") return [next, 2];
  if (next === "n" || next === "r" || next === "t" || next === "b" || next === "f") return [" ", 2];
  if (next === "x") {
    const value = hexAt(text, at + 2, 2);
    return value >= 0 ? [clean(String.fromCharCode(value)), 4] : ["", 0];
  }
  if (next !== "u") return ["", 0];
  const value = hexAt(text, at + 2, 4);
  if (value >= 0 && (value < 0xd800 || value > 0xdfff)) {
    return [clean(String.fromCharCode(value)), 6];
  }
  if (value >= 0xd800 && value <= 0xdbff && text.startsWith("\\u", at + 6)) {
    const low = hexAt(text, at + 8, 4);
    if (low >= 0xdc00 && low <= 0xdfff) return [clean(String.fromCharCode(value, low)), 12];
  }
  return ["", 0];
}

/** How many layers are read decoded: JSON in JSON, a value percent-encoded twice, both. */
const MAX_LAYERS = 3;

/** The placeholders redaction writes (placeholders.ts), as {@link redactEscaped} reads them back. */
const PLACEHOLDER = /\[(?:redacted|token|path|url|ip|host|email)\]/g;

/**
 * Where the decoded text and what redaction made of it differ: each placeholder of `redacted` with
 * the span of `decoded` it replaced. Redaction only replaces spans with placeholders, so the
 * literal text between two placeholders is found again in `decoded`: the span a placeholder
 * replaced ends where the next literal text is first found (the last one, at the end). A literal
 * that is not found fails closed: the placeholder replaces everything to the end.
 */
function replacedSpans(decoded: string, redacted: string): [number, number, string][] {
  const spans: [number, number, string][] = [];
  const pieces: { literal: string; placeholder: string }[] = [];
  let copied = 0;
  PLACEHOLDER.lastIndex = 0;
  for (let m = PLACEHOLDER.exec(redacted); m !== null; m = PLACEHOLDER.exec(redacted)) {
    pieces.push({ literal: redacted.slice(copied, m.index), placeholder: m[0] });
    copied = m.index + m[0].length;
  }
  const tail = redacted.slice(copied);
  let at = 0;
  for (let k = 0; k < pieces.length; k++) {
    const { literal, placeholder } = pieces[k] as { literal: string; placeholder: string };
    if (!decoded.startsWith(literal, at)) {
      spans.push([at, decoded.length, placeholder]);
      return spans;
    }
    at += literal.length;
    const after = pieces[k + 1]?.literal ?? tail;
    const last = k === pieces.length - 1;
    // The placeholder was in the text already.
    if (
      decoded.startsWith(placeholder, at) &&
      (last
        ? decoded.length === at + placeholder.length + after.length && decoded.endsWith(after)
        : decoded.startsWith(after, at + placeholder.length))
    ) {
      at += placeholder.length;
      continue;
    }
    let end: number;
    if (last) end = decoded.endsWith(after) ? decoded.length - after.length : -1;
    else end = after === "" ? at + 1 : decoded.indexOf(after, at + 1);
    if (end <= at) {
      spans.push([at, decoded.length, placeholder]);
      return spans;
    }
    spans.push([at, end, placeholder]);
    at = end;
  }
  return spans;
}

/**
 * Reads the text decoded (see the file's comment) with `redactDecoded`, which must only replace
 * spans with placeholders (and is told when the text's only escapes were `\"` and `\'`, so only
 * the rules that read quotes need to run again), and replaces in the text as written what it
 * replaced in the decoded text, each span widened to the whole escapes it came from. A text
 * without escapes comes back as it is.
 *
 * Each layer is read on its own, then the next one decoded from what it left: with every layer
 * decoded at once, JSON inside JSON whose value holds an escaped quote
 * (`{"e":"{\"password\":\"ab\\\"cd\"}"}`) reads `"ab"` as the whole value and `cd` as text, where
 * one layer down the value is `"ab\"cd"`, whole.
 */
export function redactEscaped(
  text: string,
  redactDecoded: (decoded: string, quotesOnly: boolean) => string,
  layer = 0,
): string {
  const escapes = escapesIn(text);
  if (escapes === NO_ESCAPE) return text;
  const decoded = decodeLayer(text);
  if (decoded === undefined) return text;
  let redacted = redactDecoded(decoded.text, escapes === QUOTES_ONLY);
  if (layer + 1 < MAX_LAYERS) redacted = redactEscaped(redacted, redactDecoded, layer + 1);
  if (redacted === decoded.text) return text;
  const { starts } = decoded;
  let out = "";
  let copied = 0;
  for (const [from, to, placeholder] of replacedSpans(decoded.text, redacted)) {
    const start = starts[from] as number;
    const end = starts[to] as number;
    if (start < copied) continue;
    out += text.slice(copied, start) + placeholder;
    copied = end;
  }
  return out + text.slice(copied);
}
