// The ledger around an attempt (docs/architecture.md §1, "key and claim", "settle"): how a key
// moves (one pure function, `ledgerMove`), the claim of a keyed call before its attempt (with the
// first attempt's count against the server's retry budget), and a key's settle.
import { fingerprint } from "../judge/fingerprint.ts";
import {
  type ClaimOptions,
  type ClaimResult,
  type SettleOptions,
  StoreError,
} from "../store/store.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { type CallState, noteSuccess } from "./call-state.ts";
import {
  claimDoubt,
  type DoubtAnswer,
  freed,
  freeToken,
  type KeptAnswer,
  settleDoubt,
  spendKept,
} from "./doubt.ts";
import { emitCall } from "./events.ts";
import { ask, type StepAnswer } from "./flow.ts";
import { endedOutcome, modelResult, plainStop, preflightStop, stopOutcome } from "./outcomes.ts";
import { dropClock, isAborted, leaseMsOf, shareClock } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import { recordOp, storeOp, storeTrouble } from "./store-steps.ts";
import type { CallOutcome } from "./types.ts";
import { guardedAsync } from "./waits.ts";

/** A settled state of a key: `uncertain` is the ledger's word for "may have happened". */
export type SettledAs = "succeeded" | "failed" | "uncertain";

/**
 * What the flow learned of a claimed key's write: `answered` (the attempt succeeded),
 * `verified_present` / `verified_absent` (the verify step looked), `refused` (the server answered
 * with a failure that comes before any effect), `unknown` (the write may have happened), `not_sent`
 * (nothing left this side: cut before sending, refused by the index of writes in doubt, or the call
 * aborted or its run ended after the claim).
 */
export type LedgerEvent =
  | "answered"
  | "verified_present"
  | "verified_absent"
  | "refused"
  | "unknown"
  | "not_sent";

/**
 * Where a claimed key moves (pure). Only an answer about the write itself makes it `succeeded` or
 * frees it: once any attempt of the logical call may have written (`uncertain`: this call's, or
 * `retaken`: another's whose write in doubt the claim took over), a later attempt that sent
 * nothing, or was refused, leaves it `uncertain`; only the verify step or a success moves it out.
 * A person moves any key by hand (`governor.settle`), and the run's end moves the keys it lists
 * (`settleAtEnd`) to `failed`. The store refuses a `failed` or `uncertain` settle from a claim that
 * is not the key's latest (`SettleOptions.claimedAt`): an attempt whose lease ran out cannot free,
 * or mark, a key another attempt took over since, whatever that attempt came to.
 */
export function ledgerMove(
  doubt: { readonly uncertain: boolean; readonly retaken: boolean },
  event: LedgerEvent,
): SettledAs {
  switch (event) {
    case "answered":
    case "verified_present":
      return "succeeded";
    case "verified_absent":
      return "failed";
    case "unknown":
      return "uncertain";
    case "refused":
      // A refusal that comes before any effect frees the key, unless an earlier attempt of this
      // call may have written (the flow then judges the failure `unknown`, failed-attempt.ts).
      return doubt.uncertain ? "uncertain" : "failed";
    case "not_sent":
      return doubt.uncertain || doubt.retaken ? "uncertain" : "failed";
  }
}

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
 * Settles the call's key; a result the store cannot keep (not JSON) is dropped, the state is not.
 * A store that fails throws a `store_error`: the entry stays pending, and a pending entry whose
 * lease has passed counts as uncertain (fail closed). The write's entry in the index of writes in
 * doubt is settled first (see doubt.ts). `record`: the settle records an attempt already over
 * (a failed attempt's, made after the waits that judged it), so it is bounded by the store
 * timeout alone, as a settle to `uncertain` always is (store-steps.ts `recordOp`): a deadline or
 * an abort that came meanwhile must not leave it unwritten.
 */
export function settle(
  state: CallState,
  to: SettledAs,
  result?: unknown,
  record = false,
): MaybePromise<void> {
  if (state.doubtHeld) {
    const mirrored = settleDoubt(state, to, record);
    if (isThenable(mirrored)) return settleAfter(mirrored, state, to, result, record);
  }
  return writeSettle(state, to, result, record);
}

/**
 * The key's own settle alone: a success that hands its answer over later settles its write's entry
 * itself then (doubt.ts `handOver`).
 */
export function settleKey(state: CallState, to: SettledAs, result?: unknown): MaybePromise<void> {
  return writeSettle(state, to, result, false);
}

/** The key's own settle once its write's entry was settled (apart: its closure). */
function settleAfter(
  mirrored: Promise<void>,
  state: CallState,
  to: SettledAs,
  result: unknown,
  record: boolean,
): Promise<void> {
  return mirrored.then(() => writeSettle(state, to, result, record));
}

/**
 * The key's own settle. JSON refuses a BigInt or a cycle with a TypeError, nesting deeper than its
 * stack with a RangeError, and a `toJSON` may throw anything, which a store may wrap in its own
 * error: so when the settle fails the result itself is tried (on this failure path only), not the
 * error's class, and a result that is not JSON is dropped. Were the state not written, the key
 * would stay pending and the same logical call be refused later, its write's success lost.
 */
function writeSettle(
  state: CallState,
  to: SettledAs,
  result: unknown,
  record: boolean,
): MaybePromise<void> {
  if (result === undefined) return write(state, to, undefined, record);
  let written: MaybePromise<void>;
  try {
    written = write(state, to, result, record);
  } catch (error) {
    return writeWithoutResult(state, to, result, error, record);
  }
  return isThenable(written) ? writtenOrWithout(written, state, to, result, record) : written;
}

/** A pending settle whose failure is tried again without its result (apart: its closure). */
function writtenOrWithout(
  written: Promise<void>,
  state: CallState,
  to: SettledAs,
  result: unknown,
  record: boolean,
): Promise<void> {
  return written.then(undefined, (error: unknown) =>
    writeWithoutResult(state, to, result, error, record),
  );
}

/** The settle failed: written again without a result that is not JSON, else its error stands. */
function writeWithoutResult(
  state: CallState,
  to: SettledAs,
  result: unknown,
  error: unknown,
  record: boolean,
): MaybePromise<void> {
  if (writesAsJson(result)) throw error;
  return write(state, to, undefined, record);
}

const nothing = (): undefined => undefined;

/** The call's key settled as not sent (errors dropped: unrecorded, the entry stays pending, in doubt). */
export function settleUnsent(state: CallState): Promise<unknown> {
  return guardedAsync(() => settle(state, ledgerMove(state, "not_sent")));
}

/** One settle write: the claim this call holds, and the result when there is one. */
function write(
  state: CallState,
  to: SettledAs,
  result: unknown,
  record: boolean,
): MaybePromise<void> {
  const key = state.key as string;
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
  // A write in doubt, or an attempt already over, is recorded even when a cut left no time
  // (store-steps.ts).
  const op = to === "uncertain" || record ? recordOp : storeOp;
  return op(state, "a ledger settle", (s) => s.run.core.store.settle(key, to, options));
}

/** Whether `JSON.stringify` writes the value without throwing. */
export function writesAsJson(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * The ledger claim of a keyed call, then its write's entry in the index of writes in doubt: a
 * replay, a refusal, or undefined (claimed). Observe-only mints no key: it sends calls untouched.
 */
export function claim(state: CallState): MaybePromise<StepAnswer> {
  const { key, argsHash } = state;
  if (key === undefined || argsHash === undefined) return undefined;
  // A first attempt admitted before a stop reaches this after the end only across an await (an
  // asynchronous preflight): it claims nothing when the end closed its key. Otherwise (a store
  // that drops nothing early, e.g. Redis) it claims, and `stillSendable` stops it unsent.
  if (closedByEnd(state, key)) return endedOutcome(state);
  return ask(state, claimKey, claimAnswered, notSentTrouble);
}

/** The claim, through the store guard (store-steps.ts). */
function claimKey(state: CallState): MaybePromise<ClaimResult> {
  return storeOp(state, "a ledger claim", sendClaim);
}

/** The claim itself, sent to the store; its `now` is kept until the answer (`claimingAt`). */
function sendClaim(state: CallState): MaybePromise<ClaimResult> {
  const r = state.run;
  const { core } = r;
  const key = state.key as string;
  const argsHash = state.argsHash as string;
  // A key minted from the run instance (no callId, or no scope) is the run's own: the store may
  // drop it when the run ends (`Store.release`).
  const owner = ownKey(state) ? r.instanceId : undefined;
  const options: ClaimOptions = {
    now: core.now(),
    // Only a server that deduplicates by key makes taking over a write in doubt safe. Not a verify
    // step's `absent`: it freed this call's key (settled `failed`), so a key found in doubt now
    // is another attempt's, sent after that verify looked, and sending again may write twice.
    allowUncertain: state.tool.idempotency.honorsKeys,
    leaseMs: leaseMsOf(r),
    owner,
  };
  state.claimingAt = options.now;
  return core.store.claim(key, argsHash, options);
}

/** The ledger's answer to the claim: a replay, a refusal, or the key claimed. */
function claimAnswered(state: CallState, answer: ClaimResult): MaybePromise<StepAnswer> {
  if (answer.status === "succeeded") {
    noteSuccess(state);
    emitCall(state, "replayed");
    return { kind: "ok", value: answer.entry.result, attempts: state.attempts, replayed: true };
  }
  if (answer.status === "ledger_full") return storeTrouble(state, ledgerFull(), "not_sent");
  if (answer.status !== "claimed") return refusedClaim(state, answer.status);
  // The store's mark of this claim; a store that gives none is named by the claim's `now`.
  state.claimedAt = answer.claimedAt ?? state.claimingAt;
  // Each claim says anew: a key this call settled back to uncertain is taken over again.
  state.retaken = answer.retaken === true;
  // Not taken over but free: whoever freed the key meanwhile (a person's settle) resolved this
  // call's doubt, and the write's entry in doubt is no longer known to be its own (an identical
  // write of another call may have claimed it and be in doubt now): it is claimed as any
  // identical write's, never taken over.
  if (!state.retaken && state.doubtHeld) freed(state);
  return ask(state, claimDoubtOf, doubtAnswered, notSentTrouble);
}

function claimDoubtOf(state: CallState): MaybePromise<DoubtAnswer> {
  return claimDoubt(state, state.retaken);
}

function doubtAnswered(state: CallState, doubt: DoubtAnswer): MaybePromise<StepAnswer> {
  if (doubt === "free") return undefined;
  return typeof doubt === "object" ? replayKept(state, doubt) : refusedByDoubt(state, doubt);
}

/**
 * An identical write went through and its answer never reached the model (kept-answer.ts): that
 * answer is this call's, and nothing is sent. Its key is settled `succeeded` with it (the same
 * logical call replays it again), then the kept answer is spent (an identical call after this one
 * is a new write); a store that fails on the spend (twice: doubt.ts `spendKept`) leaves it to be
 * given once more, never a write made twice.
 */
async function replayKept(state: CallState, kept: KeptAnswer): Promise<CallOutcome<unknown>> {
  try {
    // Recorded as this call's own success would be: without it for a tool whose results are not kept.
    await settle(state, "succeeded", state.tool.idempotency.replay ? kept.answer : undefined);
  } catch (error) {
    // Not given: the next identical call takes it, not told for a lease that a write is out.
    await guardedAsync(() => freeToken(state, kept.token));
    return storeTrouble(state, error, "not_sent");
  }
  await guardedAsync(() => spendKept(state, state.run.core.now(), kept.token));
  noteSuccess(state);
  emitCall(state, "replayed");
  return { kind: "ok", value: kept.answer, attempts: state.attempts, replayed: true };
}

/**
 * An identical write in flight or in doubt (doubt.ts) refuses this one: its key is settled as not
 * sent first.
 */
async function refusedByDoubt(
  state: CallState,
  doubt: Exclude<DoubtAnswer, "free" | KeptAnswer>,
): Promise<CallOutcome<unknown>> {
  await settleUnsent(state);
  if (doubt === "ledger_full") return storeTrouble(state, ledgerFull(), "not_sent");
  if (doubt === "in_flight") return refusedClaim(state, "in_flight");
  return identicalInDoubt(state);
}

/** The store failed before anything was sent: the call stops, nothing more is executed. */
function notSentTrouble(state: CallState, error: unknown): Promise<CallOutcome<unknown>> {
  return storeTrouble(state, error, "not_sent");
}

/** A first attempt counts against the server's retry budget window. */
export function countFirst(state: CallState): MaybePromise<StepAnswer> {
  if (state.attempts > 0) return undefined;
  return ask(state, countOp, nothing, countTrouble);
}

function countOp(state: CallState): MaybePromise<unknown> {
  return storeOp(state, "a retry-budget count", countCall);
}

function countTrouble(state: CallState, error: unknown): MaybePromise<StepAnswer> {
  if (state.run.observeOnly && state.key === undefined) return undefined;
  return storeTrouble(state, error, "not_sent");
}

/**
 * The store steps may have seen the call aborted or the run end: nothing is sent then, and a key
 * just claimed is settled as not sent.
 */
export function stillSendable(state: CallState): MaybePromise<StepAnswer> {
  const { key } = state;
  if (isAborted(state)) {
    if (key === undefined) return preflightStop(state, "aborted");
    return unsentThen(state, abortedStop);
  }
  // The run ended by a stop Governor decided while this attempt waited on the store (its claim,
  // its count against the server's retry budget, a host's approval turn): it has sent nothing,
  // so nothing is sent after the stop, as after any wait before sending (`beforeSending`). Its
  // key, if it claimed one, is settled as not sent (a write in doubt it took over stays so).
  const r = state.run;
  if (r.observeOnly) return undefined;
  if (r.ended !== undefined) return unsentOutcome(state, endedOutcome);
  // A step that waited dropped the admission's clock reading: the deadline may have passed
  // meanwhile, and a store answer that came after it, before any timer had its turn (a busy
  // event loop), must not send. So may a host's store that answers at once (SQLite waiting on
  // another connection's lock): its answer took time all the same. (The memory store, with no
  // wait: the admission's reading stands, no clock read.)
  if ((r.clockFor !== state || r.core.ownStore !== true) && r.core.now() >= r.deadline) {
    return unsentOutcome(state, deadlineStop);
  }
  return undefined;
}

const deadlineStop = (state: CallState) => preflightStop(state, "deadline_exceeded");

/** The call's outcome, its key (if it claimed one) settled as not sent first. */
function unsentOutcome(
  state: CallState,
  outcome: (state: CallState) => CallOutcome<unknown>,
): MaybePromise<CallOutcome<unknown>> {
  if (state.key === undefined || state.claimedAt === undefined) return outcome(state);
  return unsentThen(state, outcome);
}

const abortedStop = (state: CallState) => preflightStop(state, "aborted");

/** The key settled as not sent, then the call's outcome. */
async function unsentThen(
  state: CallState,
  outcome: (state: CallState) => CallOutcome<unknown>,
): Promise<CallOutcome<unknown>> {
  await settleUnsent(state);
  return outcome(state);
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

/**
 * Whether the run's end closed the key to a claim, so that an identical write claiming it now may
 * write twice: the end lets a store with `release` drop the run's own keys (no `callId`: an
 * identical write that succeeded may be gone from the ledger), and it settled `failed`, whatever
 * the store, the keys of writes in doubt whose failure went to the model (run-state.ts `settleAtEnd`).
 */
function closedByEnd(state: CallState, key: string): boolean {
  const r = state.run;
  if (r.ended === undefined) return false;
  const own = ownKey(state) && r.core.store.release !== undefined;
  return own || r.settledAtEnd?.has(key) === true;
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
