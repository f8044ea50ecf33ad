/**
 * What stands around a quoted value, read by hand for the normalizer's quoted-value pass: three
 * patterns anchored at one end of a short window (`^\s*:`, `[{,]\s*$` and the key before a value),
 * which the regex engine would try at every position of the window. Each answers as its pattern
 * (quote-context.test.ts).
 * @internal For the normalizer; not part of the public API.
 */

import { isWhitespace } from "./redact.ts";

/** `[\w.-]`, the characters of a key. */
function isKeyChar(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95 ||
    code === 46 ||
    code === 45
  );
}

function isQuote(code: number): boolean {
  return code === 34 || code === 39;
}

/** `/^\s*:/.test(text.slice(from, from + 8))`: a `:` follows, after whitespace, within 8 characters. */
export function colonFollows(text: string, from: number): boolean {
  const end = Math.min(from + 8, text.length);
  let at = from;
  while (at < end && isWhitespace(text.charCodeAt(at))) at++;
  return at < end && text.charCodeAt(at) === 58;
}

/** `/[{,]\s*$/.test(text)`: the text ends in `{` or `,`, then whitespace. */
export function endsInObjectSeparator(text: string): boolean {
  let at = text.length - 1;
  while (at >= 0 && isWhitespace(text.charCodeAt(at))) at--;
  const code = text.charCodeAt(at);
  return code === 123 || code === 44;
}

/**
 * The key the text ends with, as `/(?:["']([\w.-]{1,40})["']\s*:\s*|([\w.-]{1,40})=)$/` reads it
 * (its first group, or else its second): a quoted key, a `:` and whitespace around it (`"key": `),
 * or a bare key before `=` (its last 40 characters: the leftmost match is the longest).
 */
export function keyAtEnd(text: string): string | undefined {
  let end = text.length;
  if (text.charCodeAt(end - 1) === 61) {
    // `key=`: the run of key characters before the `=`, at most 40 of them.
    const eq = end - 1;
    let start = eq;
    while (start > 0 && eq - start < 40 && isKeyChar(text.charCodeAt(start - 1))) start--;
    return start === eq ? undefined : text.slice(start, eq);
  }
  // `"key"` then whitespace, `:`, whitespace: every class apart, so read back one way only.
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  if (text.charCodeAt(end - 1) !== 58) return undefined;
  end--;
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  if (!isQuote(text.charCodeAt(end - 1))) return undefined;
  const close = end - 1;
  let start = close;
  while (start > 0 && isKeyChar(text.charCodeAt(start - 1))) start--;
  const length = close - start;
  if (length < 1 || length > 40 || !isQuote(text.charCodeAt(start - 1))) return undefined;
  return text.slice(start, close);
}
