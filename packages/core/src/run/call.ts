// One `run.call` from start to outcome: open the call, preflight, mint its key, then the attempt
// loop. With a store that answers synchronously, the executor's answer is the only thing awaited,
// and a call that succeeds at once goes through one `then`, not an async function's frames.

import type { MaybePromise } from "../types.ts";
import { beforeAttempt, landed, landedAs, retryAfter, send, sendAndLand } from "./attempts.ts";
import { type CallState, mintKey, observe, openCall } from "./call-state.ts";
import { Escape, RetryRequest } from "./control.ts";
import { isAborted } from "./cuts.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { preflight, preflightModel } from "./preflight.ts";
import { dropClock, type RunState, stopRun } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
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
  if (tracing === undefined) {
    return request.signal === undefined
      ? governed(state, execute)
      : withCallSignal(state, request.signal, execute);
  }
  const traced = tracing.callStarted(state, execute);
  return tracing.callSettled(
    state,
    request.signal === undefined
      ? governed(state, traced)
      : withCallSignal(state, request.signal, traced),
  );
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

/** What a failure the host must see is thrown as: an escaped value is thrown as itself. */
function unwrap(error: unknown): unknown {
  return error instanceof Escape ? error.value : error;
}

/** The run's end, arguments that are not JSON, then preflight: undefined lets the call go on. */
function prepare(state: CallState): MaybePromise<CallOutcome<unknown> | undefined> {
  const r = state.run;
  if (r.ended && !r.observeOnly) return endedOutcome(state);
  if (state.invalidArgs !== undefined) {
    const refused = preflightModel(
      state,
      "correct_arguments",
      "invalid_argument",
      // What reading them threw (a toJSON, a getter, a proxy) is redacted like any failure text.
      `the arguments are not valid JSON (${observe(state.invalidArgs, state)})`,
      true,
    );
    if (refused) return refused;
  }
  return preflight(state);
}

/**
 * What an error during the attempts comes to: an abort or the run's end is the outcome, attempts
 * the retry loop gave up on stop with `retries_exhausted`; anything else is thrown.
 */
function duringAttempts<T>(state: CallState, error: unknown): CallOutcome<T> {
  if (error instanceof Escape) throw error.value;
  const r = state.run;
  if (isAborted(state)) return preflightStop(state, "aborted");
  if (r.ended && !r.observeOnly) return endedOutcome(state);
  if (error instanceof RetryRequest) return preflightStop(state, "retries_exhausted");
  throw error;
}

/** `duringAttempts` as a promise. */
function settledDuringAttempts<T>(state: CallState, error: unknown): Promise<CallOutcome<T>> {
  try {
    return Promise.resolve(duringAttempts<T>(state, error));
  } catch (thrown) {
    return Promise.reject(thrown);
  }
}

/** Preflight, the key, then the attempts; synchronous up to the executor when the store is. */
function governed<T>(state: CallState, execute: Executor<T>): Promise<CallOutcome<T>> {
  let pre: MaybePromise<CallOutcome<unknown> | undefined>;
  try {
    pre = prepare(state);
    if (isThenable(pre)) {
      // Preflight's clock reading is stale once it has awaited.
      dropClock(state.run);
      return afterPreflight(state, execute, pre);
    }
    if (pre) {
      dropClock(state.run);
      return Promise.resolve(pre as CallOutcome<T>);
    }
    mintKey(state);
  } catch (error) {
    dropClock(state.run);
    return Promise.reject(unwrap(error));
  }
  let admitted: MaybePromise<CallOutcome<T> | undefined>;
  try {
    admitted = beforeAttempt<T>(state);
    if (isThenable(admitted)) return attempts(state, execute, admitted);
    if (admitted) return Promise.resolve(admitted);
    return sendAndLand(state, execute, land);
  } catch (error) {
    return settledDuringAttempts(state, error);
  }
}

/** The first attempt ended: a success is the outcome, a failure is judged (and maybe retried). */
function land<T>(
  state: CallState,
  execute: Executor<T>,
  thrown: boolean,
  value: unknown,
  deadlineHit: boolean,
): MaybePromise<CallOutcome<T>> {
  let first: MaybePromise<CallOutcome<T> | RetryRequest>;
  try {
    first = landedAs<T>(state, thrown, value, deadlineHit);
  } catch (error) {
    return duringAttempts<T>(state, error);
  }
  if (isThenable(first) || first instanceof RetryRequest) return rest(state, execute, first);
  return first;
}

/** A preflight that waits on the store (or a host hook), then the attempts. */
async function afterPreflight<T>(
  state: CallState,
  execute: Executor<T>,
  pending: Promise<CallOutcome<unknown> | undefined>,
): Promise<CallOutcome<T>> {
  try {
    const pre = await pending;
    if (pre) return pre as CallOutcome<T>;
    mintKey(state);
  } catch (error) {
    throw unwrap(error);
  }
  let admitted: MaybePromise<CallOutcome<T> | undefined>;
  try {
    admitted = beforeAttempt<T>(state);
  } catch (error) {
    return duringAttempts<T>(state, error);
  }
  return await attempts(state, execute, admitted);
}

/** The attempts once the ledger and the retry budget answered. */
async function attempts<T>(
  state: CallState,
  execute: Executor<T>,
  admission: MaybePromise<CallOutcome<T> | undefined>,
): Promise<CallOutcome<T>> {
  let first: MaybePromise<CallOutcome<T> | RetryRequest>;
  try {
    const admitted = await admission;
    if (admitted) return admitted;
    first = landed(state, await send(state, execute));
  } catch (error) {
    return duringAttempts<T>(state, error);
  }
  return await rest(state, execute, first);
}

/** A first attempt that failed: its judging, then the retries it asks for. */
async function rest<T>(
  state: CallState,
  execute: Executor<T>,
  first: MaybePromise<CallOutcome<T> | RetryRequest>,
): Promise<CallOutcome<T>> {
  try {
    const judged = await first;
    return judged instanceof RetryRequest ? await retryAfter(state, execute, judged) : judged;
  } catch (error) {
    return duringAttempts<T>(state, error);
  }
}
