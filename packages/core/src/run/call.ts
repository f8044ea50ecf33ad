// One `run.call`, top to bottom (docs/architecture.md §1). Each step is a function of its own
// module; the flow yields what it waits for, and `drive` (flow.ts) resumes it at once when the
// answer is already there (the memory store), so only the executor's answer is awaited.
//
//   openCall (call-state.ts)      the call's policy, effect, canonical arguments
//      │
//   preflight (preflight.ts)      run ended? arguments JSON? deadline, access/approval, loop
//      │                          detector, breaker, calls budget ──────────────▶ refusal
//   mintKey (call-state.ts)       a mutating call's idempotency key, once per logical call
//      │
//   attemptLoop (attempts.ts) ┌─▶ admit: run end, abort, deadline; claim the key (ledger.ts)
//      │                      │        and count the first attempt ──────────────▶ replay/refusal
//      │                      │   send: the executor, cut by the run's guard or the call's signal
//      │                      │   success ─▶ settle `succeeded`, breaker ───────────▶ ok
//      │                      │   failure ─▶ resolveFailure (failed-attempt.ts): judge, settle,
//      │                      │        breaker, host, verify, decide and spend ────▶ model / stop
//      │                      └── retry (p-retry, after the decision's backoff)
//      ▼
//   outcome                       ok | model | stop; a failure for the host is thrown (HostError)

import { attemptLoop } from "./attempts.ts";
import { type CallState, mintKey, openCall } from "./call-state.ts";
import { drive, type Flow } from "./flow.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { preflight } from "./preflight.ts";
import { dropClock, type RunState, stopRun } from "./run-state.ts";
import type { CallOutcome, Executor, ToolCall } from "./types.ts";

/** Makes one call; always a promise (a throw anywhere becomes its rejection). */
export function runCall<T>(
  r: RunState,
  request: ToolCall,
  execute: Executor<T>,
): Promise<CallOutcome<T>> {
  let state: CallState;
  try {
    state = openCall(r, request);
  } catch (error) {
    return Promise.reject(error);
  }
  const { tracing } = r.core;
  const traced = tracing === undefined ? execute : tracing.callStarted(state, execute);
  const done =
    request.signal === undefined
      ? drive(call(state, traced))
      : withCallSignal(state, request.signal, traced);
  return tracing === undefined ? done : tracing.callSettled(state, done);
}

/** The flow of one call: preflight, its key, then its attempts. */
function* call<T>(state: CallState, execute: Executor<T>): Flow<CallOutcome<T>> {
  let refused: CallOutcome<unknown> | undefined;
  try {
    refused = yield* preflight(state);
  } catch (error) {
    dropClock(state.run);
    throw error;
  }
  if (refused !== undefined) {
    // Preflight's clock reading serves only the first attempt's admission.
    dropClock(state.run);
    return refused as CallOutcome<T>;
  }
  mintKey(state);
  return yield* attemptLoop(state, execute);
}

/**
 * A call with its own signal: aborting it ends the run (the host gave up on this call and its
 * loop) and cuts its attempt in flight.
 */
async function withCallSignal<T>(
  state: CallState,
  own: AbortSignal,
  execute: Executor<T>,
): Promise<CallOutcome<T>> {
  const r = state.run;
  if (r.ended && !r.observeOnly) return endedOutcome(state);
  const onCallAbort = () => {
    if (!r.ended) stopRun(r, "aborted");
    state.cut?.(own.reason, false);
  };
  own.addEventListener("abort", onCallAbort, { once: true });
  try {
    if (own.aborted) return preflightStop(state, "aborted");
    return await drive(call(state, execute));
  } finally {
    own.removeEventListener("abort", onCallAbort);
  }
}
