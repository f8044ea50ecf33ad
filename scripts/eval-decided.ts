/**
 * What the run does with a classification on a first failure, as far as `pnpm eval` scores it:
 * the classification's action, except a correction `decide` stops on a `mutating` tool (the
 * asymmetry of harm, `stopsGuessedWrite` in packages/core/src/judge/decide.ts: the one place it is
 * decided). The eval knows the tool's effect only where a line names it (`effect`); without it the
 * line is scored as a host that declared no effect and trusted read-only annotations would see it.
 * Retry safety (a write that may have happened is not repeated without its key) is left out: it
 * depends on the call's idempotency key, which a corpus line does not have.
 */
import { type Classification, stopsGuessedWrite } from "@governor/core/judge";

type Effect = Parameters<typeof stopsGuessedWrite>[1];

export function decidedAction(c: Classification, effect: Effect | undefined): string {
  return c.action === "correct_arguments" && effect !== undefined && stopsGuessedWrite(c, effect)
    ? "stop"
    : c.action;
}
