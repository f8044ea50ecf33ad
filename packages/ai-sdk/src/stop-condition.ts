import type { Run } from "@governor/core";
import type { StopCondition, ToolSet } from "ai";

/**
 * A `stopWhen` condition that is met once the run has ended: a Governor `stop` (or the host's
 * `run.end()`) ends the generation loop after the step that stopped it, instead of handing the
 * model another turn. Combine it with a step limit.
 * @example
 * await generateText({ model, tools, stopWhen: [stepCountIs(10), governorStopCondition(run)] });
 */
export function governorStopCondition<TOOLS extends ToolSet = ToolSet>(
  run: Run,
): StopCondition<TOOLS> {
  return () => run.ended;
}
