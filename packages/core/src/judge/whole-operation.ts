/**
 * Whether a failure text refuses the call as a whole: a clause whose subject is the operation or
 * the action itself ("a handler prevented the operation", "this write operation requires a
 * procedure", "the current status of the instance does not support this operation", "this action
 * would exceed the workbook's limit") and that names no field and quotes no value.
 *
 * A correction a built-in rule reads from such a text ("required", "invalid", a bare 400) points
 * at nothing the model could change: what refused the call is the state of the target, a policy,
 * a limit of the account or the deployment. Across the labelled sets, a text that speaks of the
 * operation as a whole is a stop or a retry, almost never a correction (the figures are in
 * docs/decisions.md). A clause that also names a field (`pspReference required for this
 * operation`), speaks of the input (`a parameter is missing for this action`), names an API
 * operation by its name (`when calling the PutItem operation`) or quotes a value is about the
 * call's own input, and is not counted.
 */
import { ruleHead } from "./rules.ts";

/** The operation or the action itself, with at most one word between (`this write operation`). */
const WHOLE = /\b(?:this|the|that)\s+(?:\w+\s+)?(?:operation|action)\b/i;

/** A name of the call's input: a snake_case or mixed-case identifier (`due_string`, `PutItem`). */
const IDENTIFIER = /\b[A-Za-z][a-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b(?=\w*[a-z][A-Z])\w+\b/;

/** A word for the call's input: a clause holding one is about what the model sent. */
const INPUT_WORD =
  /\b(?:param(?:eter)?s?|arguments?|fields?|propert(?:y|ies)|attributes?|inputs?|values?|options?|format)\b/i;

/** A quoted value. */
const QUOTED = /'[^'\n]{1,80}'|`[^`\n]{1,80}`|"[^"\n]{1,80}"/;

/**
 * Clause boundaries: a sentence's end, a line (a real or an escaped newline), JSON punctuation
 * between keys and values, a colon that introduces a detail.
 */
const CLAUSE = /(?<=[.!?])\s+|\n|\\n|[{}[\]]|"\s*[:,]\s*"|:\s+/;

/** Whether `text` holds a clause that refuses the operation as a whole and names nothing of the call. */
export function refusesWholeOperation(text: string): boolean {
  // As far as the built-in rules read (RULE_TEXT_LIMIT).
  const head = ruleHead(text);
  if (!WHOLE.test(head)) return false;
  for (const piece of head.split(CLAUSE)) {
    const clause = unquoted(piece.trim());
    if (
      WHOLE.test(clause) &&
      !IDENTIFIER.test(clause) &&
      !QUOTED.test(clause) &&
      !INPUT_WORD.test(clause)
    ) {
      return true;
    }
  }
  return false;
}

/** Quote marks a clause may begin or end with once split from JSON or a quoted message. */
const QUOTE_MARKS = "\"'`";

/**
 * The clause without the quote marks around it, read once from each end: a pattern anchored at
 * the end (`["'`]+$`) would be tried again from every mark of a long run that is not the end's,
 * quadratic in a hostile text of quote marks (about 0.1 s for 4000 of them).
 */
function unquoted(clause: string): string {
  let start = 0;
  let end = clause.length;
  while (start < end && QUOTE_MARKS.includes(clause[start] as string)) start++;
  while (end > start && QUOTE_MARKS.includes(clause[end - 1] as string)) end--;
  return clause.slice(start, end);
}
