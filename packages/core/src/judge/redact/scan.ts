/**
 * Character-level scans the redactor's families (and the normalizer) share: whitespace and word
 * characters by code, character tables and runs of them, and searches that start near an anchor
 * instead of reading every position of a long text.
 */

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

/** `[A-Za-z0-9_]`, a character of `\w` (NaN, out of range, is not). */
export function isWordCode(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95
  );
}

/** `[A-Za-z]`, by UTF-16 code. */
export function isAsciiLetter(code: number): boolean {
  const lower = code | 0x20;
  return lower >= 97 && lower <= 122;
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

/** Splits trailing sentence punctuation off a match, so `see /a/b.` keeps its period. */
export function splitTrailing(match: string): [string, string] {
  let end = match.length;
  while (end > 0 && ".:!?".includes(match.charAt(end - 1))) end--;
  return [match.slice(0, end), match.slice(end)];
}

/**
 * The leftmost match at `from` or after of a global pattern every match of which holds `anchor`
 * at most `reach` characters after its start: the search starts near the first anchor, not at
 * `from` (a pattern that reads every position of a long text is slow even when it fails). A
 * sticky pattern (`y`) holds its anchor exactly `reach` characters after its start, and is tried
 * only there, at each anchor in turn.
 */
export function nextAnchored(
  text: string,
  pattern: RegExp,
  anchor: string,
  reach: number,
  from: number,
): RegExpExecArray | null {
  if (pattern.sticky) {
    for (let at = text.indexOf(anchor, from + reach); at >= 0; at = text.indexOf(anchor, at + 1)) {
      pattern.lastIndex = at - reach;
      const match = pattern.exec(text);
      if (match !== null) {
        pattern.lastIndex = 0;
        return match;
      }
    }
    pattern.lastIndex = 0;
    return null;
  }
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
 * starts near the next anchor instead of reading every position before it. Given the pattern as
 * sticky (its source with the `y` flag) where every match holds the anchor exactly `reach`
 * characters after its start, it is tried only there (see nextAnchored).
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
