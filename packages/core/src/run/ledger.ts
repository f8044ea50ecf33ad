// The ledger steps around an attempt: the claim of a keyed call (with the first attempt's count
// against the server's retry budget) before it, and settling its key after it.
import { fingerprint } from "../judge/fingerprint.ts";
import {
  type ClaimOptions,
  type ClaimResult,
  type SettleOptions,
  StoreError,
} from "../store/store.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { type CallState, noteSuccess } from "./call-state.ts";
import { isAborted } from "./cuts.ts";
import { claimDoubt, type DoubtAnswer, settleDoubt } from "./doubt.ts";
import { emitCall } from "./events.ts";
import { endedOutcome, modelResult, plainStop, preflightStop, stopOutcome } from "./outcomes.ts";
import { dropClock, shareClock } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import { recordOp, storeOp, storeTrouble } from "./store-steps.ts";
import type { CallOutcome } from "./types.ts";
import { guardedAsync } from "./waits.ts";

/**
 * Counts a first attempt against the server's retry budget window, at the reading of the clock kept
 * for this call, else a new one (kept only while the count runs: this step may run after an await,
 * when nothing would drop it). The run is handed over, not the reading, which would be a heap
 * number per call.
 */
function countCall(state: CallState): MaybePromise<unknown> {
  const r = state.run;
  if (r.clockFor === state) return r.core.countCall(state.call.server, r);
  shareClock(r, state);
  try {
    return r.core.countCall(state.call.server, r);
  } finally {
    dropClock(r);
  }
}

/**
 * Settles a key; a result the store cannot keep (not JSON) is dropped, the state is not. A store
 * that fails throws a `store_error`: the entry stays pending, and a pending entry whose lease has
 * passed counts as uncertain (fail closed). A store that answers synchronously is not waited for.
 */
export function settle(
  state: CallState,
  key: string,
  to: "succeeded" | "failed" | "uncertain",
  result?: unknown,
): MaybePromise<void> {
  // The write's entry in the index of writes in doubt first (see doubt.ts).
  if (!state.doubtHeld) return settleKey(state, key, to, result);
  const mirrored = settleDoubt(state, to);
  return isThenable(mirrored)
    ? mirrored.then(() => settleKey(state, key, to, result))
    : settleKey(state, key, to, result);
}

/** Settles the call's own key. */
function settleKey(
  state: CallState,
  key: string,
  to: "succeeded" | "failed" | "uncertain",
  result: unknown,
): MaybePromise<void> {
  let written: MaybePromise<void>;
  try {
    written = write(state, key, to, result);
  } catch (error) {
    return withoutResult(state, key, to, result, error);
  }
  if (result === undefined || !isThenable(written)) return written;
  return writtenLater(state, key, to, result, written);
}

/** A settle with a result that the store answers later (a closure of its own: see claimKey). */
function writtenLater(
  state: CallState,
  key: string,
  to: "succeeded" | "failed" | "uncertain",
  result: unknown,
  pending: Promise<void>,
): Promise<void> {
  return pending.then(undefined, (error: unknown) => withoutResult(state, key, to, result, error));
}

/** One settle write: the claim this call holds, and the result when there is one. */
function write(
  state: CallState,
  key: string,
  to: "succeeded" | "failed" | "uncertain",
  result: unknown,
): MaybePromise<void> {
  const now = state.run.core.now();
  const { claimedAt } = state;
  const options: SettleOptions =
    result === undefined
      ? claimedAt === undefined
        ? { now }
        : { now, claimedAt }
      : claimedAt === undefined
        ? { now, result }
        : { now, result, claimedAt };
  const op = to === "uncertain" ? recordOp : storeOp;
  return op(state, "a ledger settle", (s) => s.run.core.store.settle(key, to, options));
}

/**
 * A settle that failed: a result JSON cannot write is dropped and the state written alone; any
 * other failure stands. JSON refuses a BigInt or a cycle with a TypeError, nesting deeper than its
 * stack with a RangeError, and a `toJSON` may throw anything, which a store may wrap in its own
 * error: so the result itself is tried here (on this failure path only), not the error's class.
 * Were the state not written, the key would stay pending and the same logical call be refused
 * later, its write's success lost.
 */
function withoutResult(
  state: CallState,
  key: string,
  to: "succeeded" | "failed" | "uncertain",
  result: unknown,
  error: unknown,
): MaybePromise<void> {
  if (result === undefined || writesAsJson(result)) throw error;
  return write(state, key, to, undefined);
}

/** Whether `JSON.stringify` writes the value without throwing. */
function writesAsJson(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Before an attempt: the ledger claim (keyed calls) and the retry-budget count (first attempts).
 * Undefined lets the attempt go.
 */
export function claimAndCount<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  // Observe-only sends calls untouched, store or no store.
  if (state.key === undefined || state.argsHash === undefined) return countFirst<T>(state);
  return claimKey<T>(state, state.key, state.argsHash);
}

// Closures live apart from the steps most calls take: a function whose parameters a closure
// captures makes a context on every call, even when it makes no closure.

/** The ledger claim of a keyed call. */
function claimKey<T>(
  state: CallState,
  key: string,
  argsHash: string,
): MaybePromise<CallOutcome<T> | undefined> {
  const r = state.run;
  const { core, policy } = r;
  // A first attempt admitted before a stop reaches this after the end only across an await (an
  // asynchronous preflight): it is not sent when the end closed its key. Otherwise (a store that
  // drops nothing early, e.g. Redis) it runs, as any attempt admitted before a stop.
  if (closedByEnd(state, key)) return endedOutcome<T>(state);
  // A key minted from the run instance (no callId, or no scope) is the run's own: the store may
  // drop it when the run ends (`Store.release`).
  const owner = ownKey(state) ? r.instanceId : undefined;
  const options: ClaimOptions = {
    now: core.now(),
    // Only a server that deduplicates by key makes taking over a write in doubt safe. Not a verify
    // step's `absent`: it freed this call's key (settled `failed`), so a key found in doubt now
    // is another attempt's, sent after that verify looked, and sending again may write twice.
    allowUncertain: state.tool.idempotency.honorsKeys,
    // The lease is the holder's longest attempt, not this claimer's remaining time: a claimer
    // with a short deadline must not take a key another attempt still holds.
    leaseMs: Math.min(policy.budgets.wallTimeMs, 15 * 60_000),
    owner,
  };
  let claim: MaybePromise<ClaimResult>;
  try {
    claim = storeOp(state, "a ledger claim", (s) => s.run.core.store.claim(key, argsHash, options));
  } catch (error) {
    return countTrouble<T>(state, error);
  }
  if (isThenable(claim)) {
    return claim.then(
      (answer) => afterClaim<T>(state, answer, options.now),
      (error: unknown) => countTrouble<T>(state, error),
    );
  }
  return afterClaim<T>(state, claim, options.now);
}

/** The ledger's answer: a replay, a refusal, or the claim taken (then the retry-budget count). */
function afterClaim<T>(
  state: CallState,
  claim: ClaimResult,
  claimedAt: number,
): MaybePromise<CallOutcome<T> | undefined> {
  if (claim.status === "succeeded") {
    noteSuccess(state);
    emitCall(state, "replayed");
    return {
      kind: "ok",
      value: claim.entry.result as T,
      attempts: state.attempts,
      replayed: true,
    };
  }
  if (claim.status === "ledger_full") return storeTrouble<T>(state, ledgerFull(), "not_sent");
  if (claim.status !== "claimed") return refusedClaim<T>(state, claim.status);
  state.claimedAt = claimedAt;
  // Each claim says anew: a key this call settled back to uncertain is taken over again.
  state.retaken = claim.retaken === true;
  let doubt: MaybePromise<DoubtAnswer>;
  try {
    doubt = claimDoubt(state, state.retaken);
  } catch (error) {
    return countTrouble<T>(state, error);
  }
  if (isThenable(doubt)) {
    return doubt.then(
      (answer) => afterDoubt<T>(state, answer),
      (error: unknown) => countTrouble<T>(state, error),
    );
  }
  return afterDoubt<T>(state, doubt);
}

/**
 * The index of writes in doubt answered (doubt.ts): an identical write in flight or in doubt
 * refuses this one, whose key is released as not sent first.
 */
function afterDoubt<T>(
  state: CallState,
  answer: DoubtAnswer,
): MaybePromise<CallOutcome<T> | undefined> {
  if (answer === "free") return countFirst<T>(state);
  const key = state.key as string;
  if (answer === "ledger_full") {
    return releasedAs<T>(state, key, (s) => storeTrouble<T>(s, ledgerFull(), "not_sent"));
  }
  if (answer === "in_flight") return releasedAs<T>(state, key, inFlight);
  return releasedAs<T>(state, key, identicalInDoubt);
}

function inFlight<T>(state: CallState): CallOutcome<T> {
  return refusedClaim<T>(state, "in_flight");
}

/**
 * An identical write is in doubt: this one was not sent. The stop names no key of its own (it
 * wrote nothing); the write in doubt named its key when it stopped, for a person to settle.
 */
function identicalInDoubt<T>(state: CallState): CallOutcome<T> {
  return stopOutcome<T>(
    state,
    { ...plainStop("uncertain_mutation"), personResolvable: true },
    "an identical write sent earlier may have taken effect and is not settled, so this one was not sent",
    { inherited: true },
  );
}

/** Whether the call's key is the run's own: minted from the run instance, no other run can. */
function ownKey(state: CallState): boolean {
  return state.call.callId === undefined || state.run.scope === undefined;
}

/** A first attempt counts against the server's retry budget window. */
function countFirst<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  if (state.attempts !== 0) return admitted<T>(state);
  let counted: MaybePromise<unknown>;
  try {
    counted = storeOp(state, "a retry-budget count", countCall);
  } catch (error) {
    return countTrouble<T>(state, error);
  }
  return isThenable(counted) ? countedLater<T>(state, counted) : admitted<T>(state);
}

/** A retry-budget count the store answers later. */
function countedLater<T>(
  state: CallState,
  pending: Promise<unknown>,
): Promise<CallOutcome<T> | undefined> {
  return pending.then(
    () => admitted<T>(state),
    (error: unknown) => countTrouble<T>(state, error),
  );
}

/** The store failed before an attempt; observe-only sends calls untouched, store or no store. */
function countTrouble<T>(state: CallState, error: unknown) {
  return state.run.observeOnly && state.key === undefined
    ? admitted<T>(state)
    : storeTrouble<T>(state, error, "not_sent");
}

/**
 * After the store steps, which may have seen the run end or the call aborted: nothing is sent
 * then, and a key just claimed is released as not sent.
 */
function admitted<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  if (!isAborted(state)) {
    // The run ended while this claim was pending, and its end closed the key (see closedByEnd):
    // nothing is sent. Not to a server that deduplicates by key, which makes sending it safe even
    // then (and answers for a write in doubt the claim may have taken over).
    const { key } = state;
    if (
      state.claimedAt === undefined ||
      key === undefined ||
      state.tool.idempotency.honorsKeys ||
      !closedByEnd(state, key)
    ) {
      return undefined;
    }
    return releasedAs<T>(state, key, endedOutcome);
  }
  if (state.key === undefined) return preflightStop<T>(state, "aborted");
  return releasedAs<T>(state, state.key, aborted);
}

/**
 * Whether the run's end closed the key to a claim, so that an identical write claiming it now may
 * write twice: the end lets a store with `release` drop the run's own keys (no `callId`: an
 * identical write that succeeded may be gone from the ledger), and it settled `failed`, whatever
 * the store, the keys of writes in doubt whose failure went to the model (run-state.ts `release`).
 */
function closedByEnd(state: CallState, key: string): boolean {
  const r = state.run;
  if (r.ended === undefined) return false;
  const own = ownKey(state) && r.core.store.release !== undefined;
  return own || r.releasable?.has(key) === true;
}

function aborted<T>(state: CallState): CallOutcome<T> {
  return preflightStop<T>(state, "aborted");
}

/**
 * A key just claimed for a call aborted, or whose run ended, meanwhile: released as not sent, then
 * the stop. Still uncertain when an earlier attempt may have written: one of this call, or the one
 * whose write in doubt the claim took over (see {@link unsentAs}).
 */
function releasedAs<T>(
  state: CallState,
  key: string,
  stop: (state: CallState) => MaybePromise<CallOutcome<T>>,
): Promise<CallOutcome<T> | undefined> {
  return guardedAsync(() => settle(state, key, unsentAs(state))).then(() => stop(state));
}

/**
 * What the key of an attempt not sent is settled as: `failed` (nothing written) unless an earlier
 * attempt may have written, this call's (`uncertain`) or another's whose key in doubt the claim
 * took over (`retaken`): settled `failed`, the ledger would record that write as not made.
 */
export function unsentAs(state: CallState): "failed" | "uncertain" {
  return state.uncertain || state.retaken ? "uncertain" : "failed";
}

/**
 * A ledger at its cap: the store's capacity, which only its operator can change (settle the
 * writes in doubt, raise the cap, or use a shared store), so the host is told, as for any store
 * that cannot take a claim; the model reads only that the call could not be completed.
 */
function ledgerFull(): StoreError {
  return new StoreError({
    reason: "ledger_full",
    operation: "claim",
    message:
      "the idempotency ledger is full (its cap of unsettled entries, or of all entries kept " +
      "within their retention, is reached): settle the writes in doubt with governor.settle, " +
      "or raise the store's maxUnsettled / maxLedgerEntries",
  });
}

function refusedClaim<T>(
  state: CallState,
  status: "in_flight" | "args_mismatch" | "uncertain",
): CallOutcome<T> {
  if (status === "in_flight") {
    emitCall(state, "model");
    // Not a correction's advice ("read its current state, then adjust the arguments"): an adjusted
    // call is another write, sent while the first may still write (docs/idempotency.md).
    const text = `${state.call.tool}: an identical call is still in progress. Wait for its result instead of repeating it or changing its arguments.`;
    return {
      kind: "model",
      action: "correct_arguments",
      reason: "conflict",
      fingerprint: fingerprint({ tool: state.call.tool, channel: "local", text: "in_flight" }),
      result: modelResult(text),
    };
  }
  const reason: Reason = status === "uncertain" ? "uncertain_mutation" : "business_rule";
  const observation =
    status === "uncertain"
      ? "an earlier attempt of this write may have taken effect"
      : "this call id was already used with other arguments";
  return stopOutcome(state, { ...plainStop(reason), personResolvable: true }, observation);
}
