// One `run.call`, top to bottom (docs/architecture.md §1): the list of steps below, run in order
// by `runSteps` (flow.ts), each ending the call with its outcome or letting the next one run. A
// step waits (a promise) only when it must (the executor, a remote store, a hook); with the memory
// store the executor's answer is the one thing a successful call waits for.
//
//   openCall (call-state.ts)      the call's policy, effect, canonical arguments
//      │
//   preflight (preflight.ts)      run ended? arguments JSON? deadline, access/approval, loop
//      │                          detector, breaker, calls budget ──────────────▶ refusal
//   mintKey (call-state.ts)       a mutating call's idempotency key, once per logical call
//      │
//   ATTEMPT (attempts.ts)     ┌─▶ admit: run end, abort, deadline
//      │                      │   claim (ledger.ts): the key, its write's entry in the index of
//      │                      │        writes in doubt; the retry budget counts a first attempt ─▶ replay/refusal
//      │                      │   send: the executor, cut by the run's guard or the call's signal
//      │                      │   success ─▶ settle `succeeded`, breaker ───────────▶ ok
//      │                      │   failure ─▶ judged next
//   judgeAndRetry (attempts.ts)   resolveFailure (failed-attempt.ts): judge, settle, breaker, host,
//      │                      │        verify, decide and spend ──────────────────▶ model / stop
//      │                      └── retry: p-retry runs ATTEMPT again after the decision's backoff
//      ▼
//   outcome                       ok | model | stop; a failure for the host is thrown (HostError)

import type { MaybePromise } from "../types.ts";
import { ATTEMPT, judgeAndRetry } from "./attempts.ts";
import { type CallState, mintKey, openCall } from "./call-state.ts";
import { runSteps, type Step } from "./flow.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { PREFLIGHT } from "./preflight.ts";
import { dropClock, type RunState, stopRun } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import type { CallOutcome, Executor, ToolCall } from "./types.ts";

/** A mutating call's key, minted once preflight let the call through. */
function key(state: CallState): undefined {
  mintKey(state);
  return undefined;
}

/** One call's steps, in order. */
const CALL: readonly Step[] = [...PREFLIGHT, key, ...ATTEMPT, judgeAndRetry];

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
  state.execute = tracing === undefined ? execute : tracing.callStarted(state, execute);
  const done =
    request.signal === undefined ? call<T>(state) : withCallSignal<T>(state, request.signal);
  return tracing === undefined ? done : tracing.callSettled(state, done);
}

/** The call's steps, run; what ends at once is a settled promise. */
function call<T>(state: CallState): Promise<CallOutcome<T>> {
  let outcome: MaybePromise<CallOutcome<T>>;
  try {
    outcome = runSteps(state, CALL) as MaybePromise<CallOutcome<T>>;
  } catch (error) {
    dropClock(state.run);
    return Promise.reject(error);
  }
  if (isThenable(outcome)) return outcome;
  // A call refused before it waited for anything: its clock reading is done with.
  dropClock(state.run);
  return Promise.resolve(outcome);
}

/**
 * A call with its own signal: aborting it ends the run (the host gave up on this call and its
 * loop) and cuts its attempt in flight.
 */
async function withCallSignal<T>(state: CallState, own: AbortSignal): Promise<CallOutcome<T>> {
  const r = state.run;
  if (r.ended && !r.observeOnly) return endedOutcome(state);
  const onCallAbort = () => {
    // Its own attempt first, with the signal's reason; the stop then cuts the other calls' reads
    // (their writes already sent finish).
    state.live?.cut(own.reason, false);
    if (!r.ended) stopRun(r, "aborted");
  };
  own.addEventListener("abort", onCallAbort, { once: true });
  try {
    if (own.aborted) return preflightStop(state, "aborted");
    return await call<T>(state);
  } finally {
    own.removeEventListener("abort", onCallAbort);
  }
}
