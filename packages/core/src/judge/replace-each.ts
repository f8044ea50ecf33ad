/**
 * `text.replace(pattern, replacer)` for a global pattern, as a loop of `exec`: the same result,
 * without the builtin's path for a function replacer (it gathers every match and its arguments
 * before the first call), which costs a short text more than its matches do.
 */

/**
 * Replaces every match of `pattern` (global, not unicode) in `text` by `replace(match, text)`: the
 * same string as `text.replace(pattern, (...args) => replace(matchOf(args), text))`. An empty
 * match moves the search on by one character, as the builtin does.
 * @internal For the normalizer; not part of the public API.
 */
export function replaceEach(
  text: string,
  pattern: RegExp,
  replace: (match: RegExpExecArray, text: string) => string,
): string {
  let out = "";
  let copied = 0;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const whole = match[0];
    out += text.slice(copied, match.index) + replace(match, text);
    copied = match.index + whole.length;
    if (whole === "") pattern.lastIndex++;
  }
  return copied === 0 && out === "" ? text : out + text.slice(copied);
}
