// A run: one agent task's calls under one set of budgets, until it stops or the host ends it.
// The steps of a call live in their own modules: call.ts (the flow), preflight.ts, attempts.ts
// (the attempt loop), judge-failure.ts, ledger.ts, events.ts, outcomes.ts; the run's state in
// run-state.ts and the call's in call-state.ts.
import { runCall } from "./call.ts";
import type { GovernorCore } from "./hooks.ts";
import { createRunState, endByHost, summary } from "./run-state.ts";
import type { Run, RunOptions } from "./types.ts";

export {
  type AttemptContext,
  type CallOutcome,
  type Executor,
  IDEMPOTENCY_META_KEY,
  type ModelResult,
  type Run,
  type RunOptions,
  type ToolCall,
} from "./types.ts";

/** Creates a run. Internal: use `governor.startRun()`. */
export function createRun(core: GovernorCore, options: RunOptions): Run {
  const r = createRunState(core, options);
  // Methods, not arrow properties: still bound to this run when a host passes `run.call` on
  // alone, and cheaper to make (every run makes them).
  return {
    id: r.id,
    get ended() {
      return r.ended !== undefined;
    },
    call(request, execute) {
      return runCall(r, request, execute);
    },
    end() {
      return endByHost(r);
    },
    summary() {
      return summary(r);
    },
  };
}
