// The run's store operations, each bounded, and what a store that fails comes to: nothing more is
// executed (fail closed) and the trouble goes to the host, never its text to the model.
import { type GovernorError, HostError } from "../errors.ts";
import type { Classification } from "../judge/classify.ts";
import type { Decision } from "../judge/decide.ts";
import { fingerprint } from "../judge/fingerprint.ts";
import { StoreError } from "../store/store.ts";
import type { Certainty, MaybePromise } from "../types.ts";
import type { CallState } from "./call-state.ts";
import { emitCall, record } from "./events.ts";
import type { HostContext } from "./hooks.ts";
import { plainStop, preflightStop, stopOutcome } from "./outcomes.ts";
import { bounded, cutters, isAborted, stopRun } from "./run-state.ts";
import { guardStore, isStoreError, isThenable, type StoreBound } from "./store-guard.ts";
import type { CallOutcome } from "./types.ts";
import { guardedAsync } from "./waits.ts";

/**
 * One store operation, bounded by the store timeout, the deadline, the run's signal, its end and
 * the call's signal. A synchronous store (the memory store) answers with no timer at all.
 */
export function storeOp<R>(
  state: CallState,
  op: string,
  fn: (state: CallState) => MaybePromise<R>,
): MaybePromise<R> {
  return guardStore(op, fn, storeBound, state);
}

/**
 * A store operation that records a write in doubt (a settle to `uncertain`), bounded by the store
 * timeout alone: it often follows the cut that made the write's outcome unknown (the deadline, an
 * abort, the run's end), and a bound taken from those would leave no time at all to record it
 * (docs/idempotency.md, "Store trouble").
 */
export function recordOp<R>(
  state: CallState,
  op: string,
  fn: (state: CallState) => MaybePromise<R>,
): MaybePromise<R> {
  return guardStore(op, fn, recordBound, state);
}

function recordBound(state: CallState): StoreBound {
  return { signals: [], timeoutMs: state.run.core.storeTimeoutMs };
}

/** What bounds a pending store answer (made only for one). */
function storeBound(state: CallState): StoreBound {
  const r = state.run;
  return {
    signals: cutters(state),
    timeoutMs: r.observeOnly
      ? r.core.storeTimeoutMs
      : Math.min(r.core.storeTimeoutMs, Math.max(0, r.deadline - r.core.now())),
  };
}

/**
 * The store failed before or after an attempt: nothing more is executed (fail closed) and the
 * trouble goes to the host, never its text to the model. Without an `onHostError` hook the run
 * ends and the `HostError` is thrown, as for every host failure.
 */
export async function storeTrouble<T>(
  state: CallState,
  error: unknown,
  failed: Certainty,
): Promise<CallOutcome<T>> {
  if (!isStoreError(error)) throw error;
  // An earlier attempt may have written, whatever this step came to.
  const certainty: Certainty = state.uncertain ? "unknown" : failed;
  // Cut by an abort or the host's end: that is what happened, not a store outage (the stop names
  // the key of a write that may have happened, as every stop does).
  if (isAborted(state)) return preflightStop<T>(state, "aborted");
  // A ledger that lost its data needs a person (restore it, or acknowledge the loss), and so does
  // a full one (settle the writes in doubt, or raise its cap).
  const forPerson =
    StoreError.isInstance(error) &&
    (error.reason === "ledger_lost" || error.reason === "ledger_full");
  const hostError = storeHostError(state, error, certainty);
  const print = fingerprint({
    tool: state.call.tool,
    channel: "local",
    text: "store_unavailable",
  });
  const d: Decision = { action: "host", reason: "store_unavailable", certainty };
  const c: Classification = { ...d, source: "signal" };
  record(state, { channel: "local", origin: "local", text: error.message }, c, d, print);
  const hook = state.run.core.options.onHostError;
  if (!hook) {
    emitCall(state, "host");
    stopRun(state.run, "store_unavailable", undefined, forPerson);
    throw hostError;
  }
  await bounded(state, () => hook(hostError, hostContext(state, false)), undefined);
  return stopOutcome(
    state,
    { ...plainStop("store_unavailable"), certainty, personResolvable: forPerson },
    "the call could not be completed",
    { hostError, emit: "host", recorded: true },
  );
}

/** Tells the host that the store failed after a write succeeded; the call's outcome stands. */
export function storeAfterEffect(state: CallState, error: unknown): void {
  if (!isStoreError(error)) throw error;
  const hook = state.run.core.options.onHostError;
  if (!hook) return;
  // The key is named: the host settles it `succeeded` (governor.settle), or identical calls are
  // told it is still in progress until its lease runs out.
  const hostError = storeHostError(
    state,
    error,
    undefined,
    " (the call succeeded; its key stays pending)",
    true,
  );
  void guardedAsync(() => hook(hostError, hostContext(state, false)));
}

/** The host's view of a store failure: the operation in the message, the store's error as cause. */
function storeHostError(
  state: CallState,
  error: GovernorError,
  certainty: Certainty | undefined,
  note = "",
  nameKey = false,
): HostError {
  return new HostError({
    tool: state.call.tool,
    server: state.call.server,
    reason: "store_unavailable",
    channel: "local",
    failureCode: StoreError.isInstance(error) ? error.reason : undefined,
    certainty,
    idempotencyKey: state.uncertain || nameKey ? state.key : undefined,
    message: `${state.call.tool}: ${error.message}${note}`,
    cause: error,
  });
}

/** What `onHostError` sees of a call. */
export function hostContext(state: CallState, repeatable: boolean): HostContext {
  return {
    runId: state.run.id,
    tool: state.call.tool,
    server: state.call.server,
    attempt: state.attempts,
    effect: state.effect,
    safeToRepeat: repeatable,
  };
}

/**
 * The last settle of a held entry (a free), made once more when the store failed with a
 * `StoreError` other than a timeout: unsettled, the entry would stay held, every identical write
 * refused until a person settles it (kept-answer.ts), or a kept answer given once more (doubt.ts
 * `spendKept`). Each such settle is conditional (it names the caller's claim, or the answer it
 * spends), so one that landed the first time and was claimed or kept over since is dropped by the
 * store. A timeout is not asked again: its first settle may still land, after the second. The
 * claim that keeps an answer under a hold (kept-answer.ts `claimUnderHold`) is asked so too.
 */
export function settleHeld<T>(settle: () => MaybePromise<T>): MaybePromise<T> {
  let first: MaybePromise<T>;
  try {
    first = settle();
  } catch (error) {
    return settleAgain(error, settle);
  }
  return isThenable(first) ? first.then(undefined, (error) => settleAgain(error, settle)) : first;
}

function settleAgain<T>(error: unknown, settle: () => MaybePromise<T>): MaybePromise<T> {
  if (!settlesAgain(error)) throw error;
  return settle();
}

/** Whether a failed settle of a held entry is asked once more (see `settleHeld`). */
export function settlesAgain(error: unknown): boolean {
  return StoreError.isInstance(error) && error.reason !== "timeout";
}
