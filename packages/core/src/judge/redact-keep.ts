// What redaction may leave as written: a location the model itself sent (a path in its own
// arguments) or one the server states is allowed (a filesystem server's allowed directories).
// Pure string work; redact.ts decides which values may be kept at all.

/** A piece of a text: kept as written, or to be redacted as usual. */
export interface Piece {
  readonly text: string;
  readonly kept: boolean;
}

/** Most values looked for in one text: the work stays bounded by the text's length. */
export const MAX_KEPT_VALUES = 32;

/** A character that continues a path, a name or a token: a kept value never ends beside one. */
const CONTINUES = /[\p{L}\p{N}_~/\\@%+=-]/u;

/** Whether `value` at `at` stands alone in `text`: no path or word goes on at either side. */
function standsAlone(text: string, at: number, length: number): boolean {
  const before = text.charAt(at - 1);
  if (before !== "" && (CONTINUES.test(before) || before === ".")) return false;
  const after = text.charAt(at + length);
  if (after === "") return true;
  // A period ends a sentence only when no name goes on after it (`a.txt.bak` goes on).
  if (after === ".") {
    const next = text.charAt(at + length + 1);
    return next === "" || !(CONTINUES.test(next) || next === ".");
  }
  return !CONTINUES.test(after);
}

/**
 * `text` cut into pieces: each occurrence of one of `values` that stands alone (no path, word or
 * token goes on before or after it) is a kept piece; the rest are pieces to redact. Longer values
 * are looked for first, so a value holding another is kept whole; occurrences never overlap.
 */
export function splitKept(text: string, values: readonly string[]): Piece[] {
  const found: { at: number; end: number }[] = [];
  const sorted = [...values].sort((a, b) => b.length - a.length);
  for (const value of sorted) {
    if (value === "") continue;
    for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + 1)) {
      const end = at + value.length;
      if (!standsAlone(text, at, value.length)) continue;
      if (found.some((f) => at < f.end && end > f.at)) continue;
      found.push({ at, end });
    }
  }
  if (found.length === 0) return [{ text, kept: false }];
  found.sort((a, b) => a.at - b.at);
  const pieces: Piece[] = [];
  let last = 0;
  for (const { at, end } of found) {
    if (at > last) pieces.push({ text: text.slice(last, at), kept: false });
    pieces.push({ text: text.slice(at, end), kept: true });
    last = end;
  }
  if (last < text.length) pieces.push({ text: text.slice(last), kept: false });
  return pieces;
}

/** Words that say a list of allowed locations follows "not in". */
const NAMES_ALLOWED = /\ballowed (?:directories|directory|roots|paths)\b/i;
/** An absolute path, POSIX or Windows. */
const ABSOLUTE = /^(?:\/|[A-Za-z]:[\\/])/;

/**
 * The directories a server lists as allowed in a refusal (`@modelcontextprotocol/server-filesystem`:
 * "Access denied - path outside allowed directories: /x not in /a, /b"): what the model needs to
 * correct the path, and what the server's own `list_allowed_directories` would tell it anyway.
 * Only absolute paths are taken, from a line that names the allowed directories, after its last
 * "not in ". Linear in the text.
 */
export function allowedListed(text: string): string[] {
  if (!/allowed/i.test(text)) return [];
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const named = NAMES_ALLOWED.exec(line);
    if (named === null) continue;
    const at = line.lastIndexOf(" not in ");
    if (at < named.index) continue;
    const list = line.slice(at + " not in ".length).trim();
    for (const item of list.split(", ")) {
      // A list ends a sentence: its last item may carry the period.
      const path = item.replace(/\.$/, "");
      if (ABSOLUTE.test(path) && !/\s/.test(path)) out.push(path);
    }
  }
  return out;
}
