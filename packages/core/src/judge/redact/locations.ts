/**
 * Locations: URLs, emails, paths, private IPs, internal hosts, in one pass where the leftmost
 * match wins, so the path of a kept URL is not read again as a file path. The kinds are data
 * (addresses-hosts.ts, paths.ts); this file reads them all at once.
 */
import { ADDRESS_KINDS, EMAIL_LOCATION, URL_ALONE, URL_LOCATION } from "./addresses-hosts.ts";
import { PATH_KINDS } from "./paths.ts";
import type { LocationKind } from "./rule.ts";
import { charTable, nextAnchored } from "./scan.ts";
import { SCHEME_REACH } from "./urls-credentials.ts";

/**
 * The kinds of locations, in the order of the pattern that reads them all (leftmost match first,
 * then the first kind). URLs come first: {@link redactLocations} searches them apart.
 */
const LOCATION_KINDS: readonly LocationKind[] = [
  URL_LOCATION,
  EMAIL_LOCATION,
  ...PATH_KINDS,
  ...ADDRESS_KINDS,
];
const URL_KIND = 0;

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

/**
 * The replacement of a location of a kind (an index of {@link LOCATION_KINDS}).
 * @internal Exported for tests; not part of the public API.
 */
export function redactLocation(match: string, kind: number, emails: boolean): string {
  return (LOCATION_KINDS[kind] as LocationKind).replace(match, emails);
}

/** The longest path {@link pathEnd} reads on to. */
const QUOTED_PATH_REACH = 260;

/**
 * Where a location of a kind (an index of {@link LOCATION_KINDS}) matched from `start` to `end`
 * ends: at `end`, or further for a path whose folder names hold spaces ({@link pathEnd}).
 * @internal Exported for tests; not part of the public API.
 */
export function locationEnd(text: string, kind: number, start: number, end: number): number {
  return (LOCATION_KINDS[kind] as LocationKind).spansSpaces ? pathEnd(text, start, end) : end;
}

/**
 * Where a path from `start` to `end` ends when a space follows it: see {@link closingQuote} after
 * an opening quote, else {@link spacedSegmentEnd}.
 */
function pathEnd(text: string, start: number, end: number): number {
  if (text.charCodeAt(end) !== 32) return end;
  const quote = text.charCodeAt(start - 1);
  return quote === 39 || quote === 34 // ' "
    ? closingQuote(text, start, end, quote)
    : spacedSegmentEnd(text, start, end);
}

/** What ends a word that {@link spacedSegmentEnd} reads on to: whitespace, quotes, brackets. */
const SEGMENT_STOP = charTable(" \t\r\n\"'`<>()[]{}|,;");

/**
 * A path not in quotes whose folder name holds a space (`C:/Users/Jo Quimby/.ssh/id_rsa`,
 * `/Users/a/Library/Application Support/x`): when its last segment has no `.` (not a file's
 * name) and the next word starts with an upper-case letter and holds a `/` or `\`, that word is
 * the path's too. One space only; a relative path after an absolute one (`cp /src/a dest/b`)
 * stays.
 */
function spacedSegmentEnd(text: string, start: number, end: number): number {
  for (let i = end - 1; i > start; i--) {
    const c = text.charCodeAt(i);
    if (c === 47 || c === 92) break; // "/" or a backslash
    if (c === 46) return end; // "."
  }
  const first = text.charCodeAt(end + 1);
  if (first < 65 || first > 90) return end; // not A-Z
  let goesOn = false;
  let i = end + 1;
  while (
    i < text.length &&
    i - start <= QUOTED_PATH_REACH &&
    SEGMENT_STOP[text.charCodeAt(i)] !== 1
  ) {
    const c = text.charCodeAt(i);
    if (c === 47 || c === 92) goesOn = true;
    i++;
  }
  return goesOn ? i : end;
}

/**
 * After an opening quote, a path that goes on past a space (a `/` or `\` inside a word, after at
 * most two more spaces: `Application Support/…`, `Jo Quimby\…`, `My Big Folder/…`) ends at that
 * quote's closing match on the same line (before a `\` that escapes it), within
 * {@link QUOTED_PATH_REACH} characters. A sentence after the path (`'/data/a.csv does not exist'`)
 * stays.
 */
function closingQuote(text: string, start: number, end: number, quote: number): number {
  const close = text.indexOf(String.fromCharCode(quote), end);
  if (close < 0 || close - start > QUOTED_PATH_REACH) return end;
  // A backslash before the closing quote escapes it (JSON's \"): the path ends before it.
  const stop = text.charCodeAt(close - 1) === 92 ? close - 1 : close;
  let spaces = 0;
  let goesOn = false;
  for (let i = end; i < stop; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) return end; // a line break
    if (c === 32) spaces++;
    else if (!goesOn && (c === 47 || c === 92)) {
      // A separator inside a word after at most three spaces: the path's next segment.
      if (text.charCodeAt(i - 1) === 32 || spaces > 3) return end;
      goesOn = true;
    }
  }
  return goesOn ? stop : end;
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
    const { may, onlyWithEmails } = LOCATION_KINDS[kind] as LocationKind;
    if ((emails || onlyWithEmails !== true) && may(text)) mask |= 1 << kind;
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
    // No kind matches the empty string: the next match starts after this one.
    let end = match.index + match[0].length;
    end = locationEnd(text, kind, match.index, end);
    out +=
      text.slice(last, match.index) + redactLocation(text.slice(match.index, end), kind, emails);
    last = end;
    if (url !== null && url.index < last) {
      url = nextAnchored(text, URL_ALONE, "://", SCHEME_REACH, last);
    }
    if (others !== null && other !== null && other.index < last) {
      other = nextMatch(text, others.pattern, last);
    }
  }
  return last === 0 ? text : out + text.slice(last);
}
