/**
 * What the run does with a classification on a first failure, as far as `pnpm eval` scores it:
 * the classification's action, except a correction `decide` stops on a `mutating` tool (the
 * asymmetry of harm, `stopsGuessedWrite` in packages/core/src/judge/decide.ts: the one place it is
 * decided). The eval knows the tool's effect only where a line names it (`effect`); without it the
 * line is scored as a host that declared no effect and trusted read-only annotations would see it.
 * Retry safety (a write that may have happened is not repeated without its key) is left out: it
 * depends on the call's idempotency key, which a corpus line does not have.
 */
import { loadPolicy, type ToolPolicy } from "@governor/core";
import { type Classification, resolveToolPolicy, stopsGuessedWrite } from "@governor/core/judge";

type Effect = Parameters<typeof stopsGuessedWrite>[1];

export function decidedAction(c: Classification, effect: Effect | undefined): string {
  return c.action === "correct_arguments" && effect !== undefined && stopsGuessedWrite(c, effect)
    ? "stop"
    : c.action;
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
