/**
 * Cheap tests the normalizer runs before a pass: each answers as the pattern named in its comment
 * does (normalize-hints.test.ts), by reading only around the few places where a `.`, a `:` or a
 * `: ` is, where the pattern reads every position of the text.
 * @internal For the normalizer; not part of the public API.
 */

/** Whether `code` is in `[0-9a-f]` (NaN, past the end, is not). */
function isHexDigit(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 97 && code <= 102);
}

/** Whether `code` is in `[a-z]` (NaN, past the end, is not). */
function isLowerLetter(code: number): boolean {
  return code >= 97 && code <= 122;
}

/**
 * `/:[0-9a-f]{0,4}:/.test(text)`, inside every IPv6 address. Exact: from each `:`, at most four
 * hex digits are read; the pattern matches there when the next character is a `:`.
 */
export function hasIpv6Hint(text: string): boolean {
  for (let at = text.indexOf(":"); at >= 0; at = text.indexOf(":", at + 1)) {
    let end = at + 1;
    while (end < at + 5 && isHexDigit(text.charCodeAt(end))) end++;
    if (text.charCodeAt(end) === 58) return true;
  }
  return false;
}

/**
 * `/\.[a-z]{2}/.test(text)`, inside every dotted name the host rule replaces. Exact: the two
 * characters after some `.` are letters.
 */
export function hasHostHint(text: string): boolean {
  for (let at = text.indexOf("."); at >= 0; at = text.indexOf(".", at + 1)) {
    if (isLowerLetter(text.charCodeAt(at + 1)) && isLowerLetter(text.charCodeAt(at + 2))) {
      return true;
    }
  }
  return false;
}

/**
 * `/["'`“‘]/.test(text)`, the quote that opens every quoted value. Exact: five searches for one
 * character each, which cost less than the class read at every position.
 */
export function hasOpeningQuote(text: string): boolean {
  return (
    text.includes('"') ||
    text.includes("'") ||
    text.includes("`") ||
    text.includes("“") ||
    text.includes("‘")
  );
}
