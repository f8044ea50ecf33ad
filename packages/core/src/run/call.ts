// One `run.call` from start to outcome: open the call, preflight, mint its key, then the attempt
// loop. With a store that answers synchronously, the executor is the only await.
import { beforeAttempt, landed, retryAfter, send } from "./attempts.ts";
import { type CallState, mintKey, openCall } from "./call-state.ts";
import { Escape, RetryRequest } from "./control.ts";
import { isAborted } from "./cuts.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { preflight, preflightModel } from "./preflight.ts";
import { type RunState, stopRun } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import type { CallOutcome, Executor, ToolCall } from "./types.ts";

export function runCall<T>(
  r: RunState,
  request: ToolCall,
  execute: Executor<T>,
): Promise<CallOutcome<T>> {
  const state = openCall(r, request);
  return request.signal === undefined
    ? governed(state, execute)
    : withCallSignal(state, request.signal, execute);
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
    return await governed(state, execute);
  } finally {
    own.removeEventListener("abort", onCallAbort);
  }
}

/** Preflight, the key, then the attempts. */
async function governed<T>(state: CallState, execute: Executor<T>): Promise<CallOutcome<T>> {
  const r = state.run;
  try {
    if (r.ended && !r.observeOnly) return endedOutcome(state);
    if (state.invalidArgs !== undefined) {
      const refused = preflightModel(
        state,
        "correct_arguments",
        "invalid_argument",
        `the arguments are not valid JSON (${state.invalidArgs})`,
        true,
      );
      if (refused) return refused as CallOutcome<T>;
    }
    let pre = preflight(state);
    if (isThenable(pre)) pre = await pre;
    if (pre) return pre as CallOutcome<T>;
    mintKey(state);
    try {
      // With a store that answers synchronously, the attempt's executor is the only await.
      let admitted = beforeAttempt<T>(state);
      if (isThenable(admitted)) admitted = await admitted;
      if (admitted) return admitted;
      let first = landed(state, await send(state, execute));
      if (isThenable(first)) first = await first;
      return first instanceof RetryRequest ? await retryAfter(state, execute, first) : first;
    } catch (err) {
      if (err instanceof Escape) throw err;
      if (isAborted(state)) return preflightStop(state, "aborted");
      if (r.ended && !r.observeOnly) return endedOutcome(state);
      if (err instanceof RetryRequest) return preflightStop(state, "retries_exhausted");
      throw err;
    }
  } catch (err) {
    if (err instanceof Escape) throw err.value;
    throw err;
  }
}
