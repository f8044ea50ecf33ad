/**
 * What the run does with a classification on a first failure, as far as `pnpm eval` scores it:
 * the classification's action, except a correction or a retry `decide` stops on a `mutating` tool (the
 * asymmetry of harm, `stopsGuessedWrite` in packages/core/src/judge/decide.ts: the one place it is
 * decided). The eval knows the tool's effect only where a line names it (`effect`); without it the
 * line is scored as a host that declared no effect and trusted read-only annotations would see it.
 * Retry safety (a write that may have happened is not repeated without its key) depends on the
 * call's idempotency key, which a corpus line does not have: `decidedActionUnkeyed` scores it for
 * a host that keys nothing, beside the headline.
 */
import { loadPolicy, type ToolPolicy } from "@governor/core";
import {
  type Classification,
  resolveToolPolicy,
  safeToRepeat,
  stopsGuessedWrite,
} from "@governor/core/judge";

type Effect = Parameters<typeof stopsGuessedWrite>[1];

export function decidedAction(c: Classification, effect: Effect | undefined): string {
  return (c.action === "correct_arguments" || c.action === "retry_dependency") &&
    effect !== undefined &&
    stopsGuessedWrite(c, effect)
    ? "stop"
    : c.action;
}

/**
 * What the run of a host that gives its calls no idempotency key does on a first failure: as
 * {@link decidedAction}, and a retry of a write whose outcome is unknown stops
 * (`uncertain_mutation`: `safeToRepeat` in decide.ts, the one place it is decided). A host that
 * keys its writes gets {@link decidedAction}'s retry.
 */
export function decidedActionUnkeyed(c: Classification, effect: Effect | undefined): string {
  return c.action === "retry_dependency" &&
    effect !== undefined &&
    !safeToRepeat(c.certainty, effect, false)
    ? "stop"
    : decidedAction(c, effect);
}

const NO_POLICY = loadPolicy({});
const policies = new Map<string, ToolPolicy>();

/**
 * The tool's policy as a host that declared the line's `effect` would have it (no policy where
 * the line names none), made once per effect and tool.
 */
export function lineToolPolicy(line: {
  readonly tool?: string;
  readonly effect?: Effect;
}): ToolPolicy {
  const tool = line.tool ?? "tool";
  const key = `${line.effect ?? ""}\u0000${tool}`;
  let toolPolicy = policies.get(key);
  if (toolPolicy === undefined) {
    const policy =
      line.effect === undefined
        ? NO_POLICY
        : loadPolicy({ tools: { [tool]: { effect: line.effect } } });
    toolPolicy = resolveToolPolicy(policy, tool);
    policies.set(key, toolPolicy);
  }
  return toolPolicy;
}
