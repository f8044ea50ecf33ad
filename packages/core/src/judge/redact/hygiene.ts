/**
 * Input hygiene and whitespace: what redaction removes before any pattern reads the text (ANSI
 * escapes, control characters, invisible marks that could split a secret), and how it collapses
 * whitespace and cuts a text that is too long.
 */
import { isWhitespace } from "./scan.ts";

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences start with ESC.
export const ANSI_ESCAPE = /\u001B\[[0-?]*[ -/]*[@-~]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we remove.
export const CONTROL_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;
// Invisible characters could split a secret so its pattern no longer matches: remove them. Soft
// hyphen, zero-width and bidirectional marks, embeddings and isolates, word joiners and invisible
// operators, the BOM, and what renders as nothing: the combining grapheme joiner, the Arabic letter
// mark, Hangul fillers, Khmer inherent vowels, Mongolian selectors, variation selectors and tags.
const INVISIBLE_MARKS = String.raw`\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\u{E0000}-\u{E007F}\u{E0100}-\u{E01EF}`;
export const INVISIBLE_CHARS = new RegExp(`[${INVISIBLE_MARKS}]`, "gu");

/** Any character {@link sanitize} changes (an ANSI escape starts with a control character). */
const UNCLEAN = new RegExp(`[${CONTROL_CHARS.source.slice(1, -1)}${INVISIBLE_MARKS}]`, "u");

export function sanitize(text: string): string {
  if (!UNCLEAN.test(text)) return text;
  return text.replace(ANSI_ESCAPE, "").replace(CONTROL_CHARS, " ").replace(INVISIBLE_CHARS, "");
}

/**
 * The whitespace that collapsing changes: a run of two characters or more (`\s{2,}` takes the
 * whole run), or one character other than a space. A run of one space is left as it is.
 */
export const UNEVEN_SPACE = /\s{2,}|[^\S ]/g;

/**
 * Every run of whitespace as one space: `text.replace(/\s+/g, " ")`, without rewriting each single
 * space the text already has (most texts have nothing else; they come back as they are, in half
 * the time of the test that used to guard the replace). prefilter.test.ts checks the two agree.
 * @internal Exported for the normalizer and tests; not part of the public API.
 */
export function collapseSpaces(text: string): string {
  return text.replace(UNEVEN_SPACE, " ");
}

/** Drops the last run of non-space characters: it may be the first half of a secret. */
export function dropTrailingToken(text: string): string {
  let end = text.length;
  while (end > 0 && !isWhitespace(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}
