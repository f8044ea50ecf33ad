/**
 * Caller-supplied values and patterns: the values of arguments the policy marks sensitive, removed
 * wherever they appear and in whatever form, and the policy's own patterns.
 */
import { replacePolicyPattern } from "../../policy/policy-pattern.ts";
import { sanitize } from "./hygiene.ts";
import { REDACTED } from "./placeholders.ts";

export const MIN_SENSITIVE_LENGTH = 4;

/**
 * Each UTF-16 unit in lower case where that is one unit too, alone (no final sigma): the same
 * length, so what matches in the folded text matches at the same place in the text.
 */
function foldCase(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const unit = text.charAt(i);
    const folded = unit.toLowerCase();
    out += folded.length === 1 ? folded : unit;
  }
  return out;
}

/**
 * Length of the longest suffix of `text` that is a proper prefix of `value` (KMP: linear in the
 * text, whatever the value's length).
 */
export function overlapWithPrefix(text: string, fullValue: string): number {
  // A prefix longer than the text cannot be its suffix; one extra character keeps it "proper".
  // Both in any case, as values are removed (`JANE D` is the start of `Jane Doe`).
  const value = foldCase(fullValue.slice(0, text.length + 1));
  const tail = foldCase(text.slice(Math.max(0, text.length - value.length + 1)));
  const failure = new Array<number>(value.length).fill(0);
  for (let i = 1, k = 0; i < value.length; i++) {
    while (k > 0 && value[i] !== value[k]) k = failure[k - 1] ?? 0;
    if (value[i] === value[k]) k++;
    failure[i] = k;
  }
  let k = 0;
  for (let i = 0; i < tail.length; i++) {
    const ch = tail[i];
    while (k > 0 && (k === value.length || ch !== value[k])) k = failure[k - 1] ?? 0;
    if (ch === value[k]) k++;
  }
  return k === value.length ? 0 : k;
}

export function sensitiveVariants(values: readonly string[] | undefined): string[] {
  if (values === undefined || values.length === 0) return [];
  const out = new Set<string>();
  for (const value of values) {
    if (typeof value !== "string" || value.length < MIN_SENSITIVE_LENGTH) continue;
    // A server may store and echo the value composed or decomposed (`é` or `e` and `́`).
    for (const form of new Set([value, value.normalize("NFC"), value.normalize("NFD")])) {
      out.add(form);
      // The text is sanitized before values are removed: a value holding an invisible mark or a
      // control character (an emoji's variation selector, a joiner) is also removed as it reads.
      const clean = sanitize(form);
      if (clean !== form && clean.trim().length >= MIN_SENSITIVE_LENGTH) out.add(clean);
      out.add(JSON.stringify(form).slice(1, -1));
      try {
        out.add(encodeURIComponent(form));
      } catch {
        // A lone surrogate has no URL encoding; the value itself is still removed.
      }
    }
  }
  // Longest first, so a value containing another is removed whole.
  return [...out]
    .filter((v) => v.length >= MIN_SENSITIVE_LENGTH)
    .sort((a, b) => b.length - a.length);
}

/** The characters a `u` pattern must escape to read them as themselves. */
const REGEXP_SYNTAX = /[\\^$.*+?()[\]{}|/]/g;

/**
 * Removes the values wherever they appear, in any case (a server that lowercases an email or a
 * user name, uppercases a code): each a literal matched without regard to case.
 */
export function removeValues(text: string, values: readonly string[]): string {
  let out = text;
  for (const value of values) {
    out = out.replace(new RegExp(value.replace(REGEXP_SYNTAX, "\\$&"), "giu"), REDACTED);
  }
  return out;
}

function compilePattern(pattern: RegExp): RegExp {
  return new RegExp(
    pattern.source,
    pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`,
  );
}

export function applyPatterns(
  text: string,
  patterns: readonly (string | RegExp)[] | undefined,
): string {
  if (patterns === undefined) return text;
  let out = text;
  for (const pattern of patterns) {
    // A policy's pattern (a string) runs on RE2, linear in the text: a server's long answer cannot
    // stall the loop whatever the pattern. An empty match must not insert a placeholder between
    // every character.
    out =
      typeof pattern === "string"
        ? replacePolicyPattern(pattern, out, REDACTED)
        : out.replace(compilePattern(pattern), (m) => (m === "" ? "" : REDACTED));
  }
  return out;
}
