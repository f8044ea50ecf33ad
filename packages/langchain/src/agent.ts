import type { Run } from "@governor/core";
import { createMiddleware } from "langchain";
import { throwIfStopped } from "./stop.ts";

/**
 * Middleware for `createAgent` (langchain 1.x) that ends the agent once its Governor run has
 * ended: before each model call it throws {@link GovernorStopError} if the run is over (a stop,
 * or the host's `run.end()`), so `agent.invoke` / `agent.stream` reject with the reason, the
 * run's summary and, for an uncertain write, its idempotency key. The stopping turn's tool
 * messages are in the agent's state (and its checkpointer) before that: every tool call has its
 * answer. Use it with tools from `governTools` on the same run.
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
  });
}
