/**
 * The shapes of the rules every family writes as data: a secret rule (a pattern, its replacement
 * and a cheap test) and how the engine applies one; a kind of location (a pattern source, a cheap
 * test and its replacement).
 */
import { replaceAnchored } from "./scan.ts";

export type Replacement = string | ((match: string, ...groups: unknown[]) => string);

/** A rule that rewrites the whole text itself, rather than through `String.prototype.replace`. */
export interface Rewrite {
  readonly rewrite: (text: string) => string;
}

/**
 * A secret rule: a pattern, its replacement, and a cheap test that the text holds something every
 * change the rule makes needs (when it fails, the pattern is not run: the same result, sooner).
 * @internal Exported for tests; not part of the public API.
 */
export type SecretRule = readonly [
  /** The pattern (for a {@link Rewrite}, the one it reads values with). */
  pattern: RegExp,
  replacement: Replacement | Rewrite,
  may: (text: string) => boolean,
  /** Every match holds this string at most this many characters after its start. */
  anchor?: readonly [anchor: string, reach: number],
];

/**
 * Secret rules in order, in a group whose test holds whenever the test of one of its rules does:
 * when it fails, the whole group is skipped.
 */
export interface SecretGroup {
  readonly may: (text: string) => boolean;
  readonly rules: readonly SecretRule[];
}

/**
 * What a secret rule makes of a text (its test aside).
 * @internal Exported for tests; not part of the public API.
 */
export function applySecretRule(rule: SecretRule, text: string): string {
  const [pattern, replacement, , anchor] = rule;
  if (typeof replacement === "string") return text.replace(pattern, replacement);
  if (typeof replacement !== "function") return replacement.rewrite(text);
  if (anchor === undefined) return text.replace(pattern, replacement);
  return replaceAnchored(text, pattern, anchor[0], anchor[1], replacement);
}

/**
 * A kind of location: the source of its pattern (one of the alternatives of the pattern that
 * reads every kind at once), a cheap test of something every match holds (a kind whose test fails
 * cannot match anywhere in the text, so leaving it out of the pattern changes nothing), and what
 * replaces a match.
 */
export interface LocationKind {
  readonly source: string;
  readonly may: (text: string) => boolean;
  readonly replace: (match: string, emails: boolean) => string;
  /** Read only when the caller asks for emails to be redacted. */
  readonly onlyWithEmails?: boolean;
  /**
   * A path whose folder names hold spaces: after an opening quote, a match that stops at a space
   * runs on to the closing quote on its line (`'/Users/a/Library/Application Support/…'`); not in
   * quotes, over one space into a capitalised word that holds a separator (`C:/Users/Jo Quimby/…`).
   */
  readonly spansSpaces?: boolean;
}
