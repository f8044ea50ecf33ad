/**
 * Regular expressions a policy author writes (`rules[].match`), run on a linear-time engine.
 *
 * A failure text comes from a server nobody here controls, and a pattern from a person who never
 * thought of backtracking: V8 needs 14 s for an ordinary `quota.*reset` on a 234 KB text of
 * `quota`s, and a nested quantifier can take longer than the run's deadline on 4 KB. RE2
 * (`re2js`, a pure-JS port) matches in time linear in the text for every pattern it accepts, so no
 * pattern can stall the agent loop and no home-made "is this pattern dangerous" check is needed.
 * What RE2 does not accept (lookahead, backreferences) is refused when the policy loads, with the
 * field's path. Patterns are compiled once per source and kept; they see the text cut to
 * {@link RULE_TEXT_LIMIT} characters, as the built-in rules do.
 */
import { RE2JS } from "re2js";
import { RULE_TEXT_LIMIT } from "../judge/rules.ts";

const FLAGS = RE2JS.CASE_INSENSITIVE | RE2JS.LOOKBEHINDS;

/** Distinct sources kept compiled; past it the oldest is dropped (and compiled again if used). */
const MAX_COMPILED = 2048;
const compiled = new Map<string, RE2JS>();

/**
 * Why a source cannot be a policy pattern, or `undefined` when it can. The message says what is
 * accepted.
 */
export function patternProblem(source: string): string | undefined {
  try {
    compile(source);
    return undefined;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return `must be a regular expression in RE2 syntax, which runs in linear time (no lookahead, no backreferences, \\x{e9} rather than \\u00e9): ${detail}`;
  }
}

function compile(source: string, flags = FLAGS, cache = compiled): RE2JS {
  const hit = cache.get(source);
  if (hit !== undefined) return hit;
  const re = RE2JS.compile(source, flags);
  if (cache.size >= MAX_COMPILED) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(source, re);
  return re;
}

/** Redaction patterns are case-sensitive, as written. */
const redactions = new Map<string, RE2JS>();

/**
 * Replaces every non-empty match of a policy's redaction pattern (RE2 syntax, case-sensitive) in
 * `text` with `replacement`, in time linear in the text whatever the pattern.
 * @throws the engine's syntax error for a source that {@link patternProblem} refuses; a policy
 * from `loadPolicy` never holds one.
 */
export function replacePolicyPattern(source: string, text: string, replacement: string): string {
  return compile(source, RE2JS.LOOKBEHINDS, redactions)
    .matcher(text)
    .replaceAll((match: string) => (match === "" ? "" : replacement));
}

/**
 * Whether a policy pattern (case-insensitive, RE2 syntax) matches anywhere in the first
 * {@link RULE_TEXT_LIMIT} characters of a text. Compiled on first use and kept, so a policy from
 * `loadPolicy` (which checks every pattern) never compiles on the hot path.
 * @throws the engine's syntax error for a source that {@link patternProblem} refuses; a policy
 * from `loadPolicy` never holds one.
 */
export function testPolicyPattern(source: string, text: string): boolean {
  const head = text.length > RULE_TEXT_LIMIT ? text.slice(0, RULE_TEXT_LIMIT) : text;
  return compile(source).test(head);
}
