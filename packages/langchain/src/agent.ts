import type { Run } from "@governor/core";
import { createMiddleware } from "langchain";
import { throwIfStopped } from "./stop.ts";
import { countUnknownToolCalls } from "./unknown-tools.ts";

/**
 * Middleware for `createAgent` (langchain 1.x) that ends the agent once its Governor run has
 * ended: before each model call it throws {@link GovernorStopError} if the run is over (a stop,
 * or the host's `run.end()`), so `agent.invoke` / `agent.stream` reject with the reason, the
 * run's summary and, for an uncertain write, its idempotency key. The stopping turn's tool
 * messages are in the agent's state (and its checkpointer) before that: every tool call has its
 * answer. Use it with tools from `governTools` on the same run.
 *
 * It also counts each call the model makes to a tool it was not given (`ToolNode` answers those
 * itself, no governed tool sees them) as a failed call of the run, judged `unknown_tool`, so
 * Governor's repeat rule stops a model that keeps calling one (`repeated_failure`) and its
 * budgets count them. List it last among middleware that add tools to the model call: it reads
 * the tools the model was given.
 * @example
 * const run = governor.startRun();
 * const agent = createAgent({
 *   model,
 *   tools: governTools(tools, { run }),
 *   middleware: [governorMiddleware(run)],
 * });
 * try {
 *   await agent.invoke({ messages: [{ role: "user", content: "Archive note 7" }] });
 * } catch (error) {
 *   if (!(error instanceof GovernorStopError)) throw error;
 *   await reportStop(error.reason, error.idempotencyKey); // your own handler
 * }
 */
export function governorMiddleware(run: Run) {
  return createMiddleware({
    name: "GovernorMiddleware",
    beforeModel: () => {
      throwIfStopped(run);
    },
    wrapModelCall: async (request, handler) => {
      const answer = await handler(request);
      await countUnknownToolCalls(run, request.tools, answer);
      return answer;
    },
  });
}
