// What a run holds while it lasts (budgets, counts, the loop detector, its end), how it ends, and
// what cuts its calls short (its signal, the host's end, a call's own signal, its end and deadline).
// Every step of a call reads and writes this one object; nothing else is shared between calls.
import type { BudgetName } from "../judge/decide.ts";
import type { Policy } from "../policy/policy.ts";
import { EVENT_SCHEMA_VERSION, type RunSummary } from "../telemetry/events.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { type AttemptGuard, createAttemptGuard } from "./attempt-guard.ts";
import { createRunBudgets, type RunBudgets } from "./budget.ts";
import type { GovernorCore } from "./hooks.ts";
import type { OutcomeTracker } from "./outcome-tracker.ts";
import { PrintCounts } from "./print-counts.ts";
import { createLoopDetector, type LoopDetector } from "./repeats.ts";
import { isThenable } from "./store-guard.ts";
import { createRunTally, type RunTally } from "./tally.ts";
import type { RunOptions } from "./types.ts";
import {
  abortError,
  deadlineError,
  endedError,
  guarded,
  guardedAsync,
  MAX_TIMER_MS,
} from "./waits.ts";

/** One run's state. */
export interface RunState {
  readonly core: GovernorCore;
  readonly policy: Policy;
  readonly options: RunOptions;
  readonly id: string;
  /** Keys of calls without a scope are unique to this instance (made with the first such key). */
  instanceId: string | undefined;
  readonly scope: string | undefined;
  readonly startedAt: number;
  /** Epoch ms after which no attempt starts. */
  readonly deadline: number;
  readonly budgets: RunBudgets;
  readonly observeOnly: boolean;
  /** The run's signal. */
  readonly signal: AbortSignal | undefined;
  /**
   * Signals are made only when a wait needs one (a backoff, a hook, a pending store answer): a
   * call that answers at once costs none. `runEnded` aborts when the run ends: it wakes calls
   * sleeping in a backoff and bounds pending hooks. `hostEnd` aborts when the host ends the run.
   */
  runEnded: AbortController | undefined;
  hostEnd: AbortController | undefined;
  /**
   * The host ended the run: attempts in flight are cut. (A stop Governor decides cuts the reads in
   * flight and lets the writes already sent finish: cutting a write would only make its outcome
   * uncertain. The host's `run.end()` after it still cuts them.)
   */
  hostEnded: boolean;
  hostEndError: Error | undefined;
  /** One deadline timer and one listener for all the run's attempts in flight. */
  readonly guard: AttemptGuard;
  /** Counts and the stop reason, for the summary. */
  readonly tally: RunTally;
  /** How often each fingerprint reached the model (the repeat rule counts these). */
  modelRepeats: PrintCounts | undefined;
  /**
   * Per call key, the last result's signature and how many times in a row it came back: hashes,
   * never the results themselves, and at most MAX_TRACKED calls (the oldest go first).
   */
  readonly identical: LoopDetector;
  /** Per write's content (`argsHash`), how many keyed calls of it succeeded (a part of the next one's key). */
  successes: Map<string, number> | undefined;
  /** Attempts executing now: `end()` aborts them. */
  inFlight: number;
  /**
   * The clock as a call's synchronous steps last read it, and the call that read it (see
   * {@link shareClock}): preflight's reading serves the first attempt's admission and its
   * retry-budget count, so a call that answers at once reads the clock once, not three times.
   * Written in place: a number kept in a field of a new object, or a fresh reading, is a new
   * heap number each time.
   */
  clockAt: number;
  clockFor: object | undefined;
  /**
   * Keys of this run instance left uncertain after a failure that went to the model: the run's
   * end settles them `failed` ({@link settleAtEnd}). Kept after the end: a claim of one after the
   * end is refused (see ledger.ts `closedByEnd`).
   */
  settledAtEnd: Set<string> | undefined;
  callCount: number;
  ended: RunSummary | undefined;
  /**
   * Learning from outcomes: made at the run's first failure, so a run whose calls all succeed
   * never touches the learning store.
   */
  learning: OutcomeTracker | undefined;
  /**
   * The id of the run that goes on from this one (`RunOptions.continues`), once one does: a second
   * would get what this one left over again.
   */
  continuedBy: string | undefined;
}

/**
 * A run's state at its start. One that goes on from `from` (`RunOptions.continues`) starts with
 * what `from` spent of its budgets, the model's repeat counts and a deadline no later than its:
 * one task split into runs by stops must get no more budget, wall time or tellings of the same
 * failure than one run would. Its loop detector starts empty: `from`'s was emptied at its end (its
 * table given back for the next run), and what a fresh one lets through is bounded by the budgets
 * carried over (docs/budgets.md).
 */
export function createRunState(core: GovernorCore, options: RunOptions, from?: RunState): RunState {
  const { policy } = core;
  const startedAt = core.now();
  const deadline = Math.min(
    options.deadline ?? Number.POSITIVE_INFINITY,
    startedAt + policy.budgets.wallTimeMs,
    from?.deadline ?? Number.POSITIVE_INFINITY,
  );
  const observeOnly = policy.observeOnly;
  const signal = options.signal;
  const state: RunState = {
    core,
    policy,
    // Not the run it goes on from: kept in the options, every run of a chain would keep alive the
    // runs before it.
    options: from === undefined ? options : withoutContinues(options),
    id: options.runId ?? core.newRunId(),
    instanceId: undefined,
    scope: options.idempotencyScope,
    startedAt,
    deadline,
    budgets: createRunBudgets(policy.budgets, from?.budgets),
    observeOnly,
    signal,
    runEnded: undefined,
    hostEnd: undefined,
    hostEnded: false,
    hostEndError: undefined,
    guard: createAttemptGuard({ deadline, now: core.now, enforceDeadline: !observeOnly, signal }),
    tally: createRunTally(),
    modelRepeats: from?.modelRepeats?.copy(),
    identical: createLoopDetector(),
    successes: undefined,
    inFlight: 0,
    clockAt: startedAt,
    clockFor: undefined,
    settledAtEnd: undefined,
    callCount: 0,
    ended: undefined,
    learning: undefined,
    continuedBy: undefined,
  };
  if (from !== undefined) from.continuedBy = state.id;
  return state;
}

function withoutContinues(options: RunOptions): RunOptions {
  const { continues: _from, ...rest } = options;
  return rest;
}

/**
 * Reads the run's clock for `call`, and keeps the reading for its next steps taken before anything
 * is awaited (they take it with {@link keepClock}).
 */
export function shareClock(r: RunState, call: object, now: number = r.core.now()): number {
  r.clockAt = now;
  r.clockFor = call;
  return now;
}

/**
 * Makes `r.clockAt` the reading {@link shareClock} kept for `call`, else a new one (then kept).
 * The caller reads `r.clockAt` itself: a number returned by a call that is not inlined is a heap
 * number per call. Only a step that runs in the same synchronous stretch as the reading may take
 * it: whatever awaits drops it first ({@link dropClock}).
 */
export function keepClock(r: RunState, call: object): void {
  if (r.clockFor !== call) shareClock(r, call);
}

/** The kept reading is stale from now on (the call awaits something, or is done with it). */
export function dropClock(r: RunState): void {
  r.clockFor = undefined;
}

/** How often a fingerprint reached the model in this run (undefined: never). */
export function modelRepeatsOf(r: RunState, print: string): number | undefined {
  return r.modelRepeats?.get(print);
}

/** One more time a fingerprint reached the model (the map is made at the first). */
export function countModelRepeat(r: RunState, print: string): void {
  r.modelRepeats ??= new PrintCounts();
  r.modelRepeats.add(print);
}

/**
 * How long a claim of this run holds its key (`ClaimOptions.leaseMs`): the run's longest attempt,
 * at most 15 min, not the claimer's remaining time (a claimer with a short deadline must not take
 * a key another attempt still holds).
 */
export function leaseMsOf(r: RunState): number {
  return Math.min(r.policy.budgets.wallTimeMs, MAX_LEASE_MS);
}

/** The longest lease any run's claim holds (see {@link leaseMsOf}). */
export const MAX_LEASE_MS = 15 * 60_000;

/** A key left uncertain that the run's end settles `failed` (the set is made at the first). */
export function settleAtEnd(r: RunState, key: string): void {
  r.settledAtEnd ??= new Set();
  r.settledAtEnd.add(key);
}

/** This run instance's id, made on first use: a run of read-only calls never needs one. */
export function instance(r: RunState): string {
  r.instanceId ??= r.core.newRunId();
  return r.instanceId;
}

export function hostEndReason(r: RunState): Error {
  r.hostEndError ??= endedError("The run was ended");
  return r.hostEndError;
}

export function runEndedSignal(r: RunState): AbortSignal {
  r.runEnded ??= new AbortController();
  if (r.ended && !r.runEnded.signal.aborted) r.runEnded.abort(endedError("The run has ended"));
  return r.runEnded.signal;
}

/** `run.signal` of each run whose host read it (kept apart: most runs never make one). */
const overSignals = new WeakMap<RunState, AbortSignal>();

/**
 * Aborts once no call of the run may go on: its end, its signal, its deadline (see `Run.signal`).
 * Its listeners and timer go when it aborts; the timer does not hold the process open.
 */
export function runOverSignal(r: RunState): AbortSignal {
  const known = overSignals.get(r);
  if (known !== undefined) return known;
  const over = new AbortController();
  overSignals.set(r, over.signal);
  const ended = runEndedSignal(r);
  const own = r.signal;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stop = (reason: unknown) => {
    clearTimeout(timer);
    ended.removeEventListener("abort", onEnd);
    own?.removeEventListener("abort", onOwn);
    over.abort(reason);
  };
  const onEnd = () => stop(ended.reason);
  const onOwn = () => stop(own?.reason);
  const onDeadline = () => stop(deadlineError());
  const left = r.deadline - r.core.now();
  if (ended.aborted) onEnd();
  else if (own?.aborted) onOwn();
  // Read past the deadline: aborted now, not a timer tick later (a wait checked first never starts).
  else if (!r.observeOnly && left <= 0) onDeadline();
  else {
    ended.addEventListener("abort", onEnd, { once: true });
    own?.addEventListener("abort", onOwn, { once: true });
    if (!r.observeOnly && left <= MAX_TIMER_MS) {
      timer = setTimeout(onDeadline, left);
      timer.unref?.();
    }
  }
  return over.signal;
}

export function hostEndSignal(r: RunState): AbortSignal {
  r.hostEnd ??= new AbortController();
  if (r.hostEnded && !r.hostEnd.signal.aborted) r.hostEnd.abort(hostEndReason(r));
  return r.hostEnd.signal;
}

/**
 * Once the run ends, nobody can derive its instance keys again, so an uncertain entry the model
 * was told to correct guards nothing: it is settled `failed` (kept for the retention period)
 * rather than left to fill the fail-closed ledger. Keys of `uncertain_mutation` stops stay for a
 * person to settle.
 */
function settleKeysAtEnd(r: RunState): void {
  if (r.settledAtEnd === undefined) return;
  for (const key of r.settledAtEnd) {
    void guardedAsync(() => r.core.store.settle(key, "failed", { now: r.core.now() }));
  }
}

/**
 * Once the run ends, the keys it minted from its instance for calls without `callId` can never be
 * claimed again (no other run can mint them, and this one claims none from now on): a store that
 * can may drop those settled now rather than keep them for the retention period (`Store.release`).
 * Pending and uncertain ones stay. Issued after `settleKeysAtEnd`'s settles, so those go too.
 */
function dropOwnKeys(r: RunState): void {
  const owner = r.instanceId;
  const { store } = r.core;
  if (owner === undefined || store.release === undefined) return;
  try {
    const done = store.release(owner);
    if (isThenable(done)) done.then(undefined, ignore);
  } catch {
    // Only room is at stake: the entries stay for their retention.
  }
}

function ignore(): void {}

export function summary(r: RunState): RunSummary {
  return (
    r.ended ??
    // The run's own calls: a run that goes on with another's budgets does not report its calls.
    r.tally.summary(r.id, r.budgets.ownOf("calls"), r.core.now() - r.startedAt, r.observeOnly)
  );
}

export function end(r: RunState): RunSummary {
  if (r.ended) return r.ended;
  // Ended by the host while calls still run: they are aborted, so the run did not complete.
  if (r.inFlight > 0) r.tally.stop("aborted", undefined, false);
  const s = summary(r);
  r.ended = s;
  r.identical.clear();
  settleKeysAtEnd(r);
  dropOwnKeys(r);
  if (r.runEnded !== undefined) r.runEnded.abort(endedError("The run has ended"));
  if (r.core.listening) emitRunEnd(r, s);
  r.core.tracing?.runEnded(r, s);
  const { onStop } = r.core.options;
  if (onStop !== undefined) guarded(() => onStop(s));
  return s;
}

/** The `run_end` event (built only when something listens). */
function emitRunEnd(r: RunState, s: RunSummary): void {
  r.core.emit({
    v: EVENT_SCHEMA_VERSION,
    type: "run_end",
    at: r.core.now(),
    runId: r.id,
    summary: s,
  });
}

export function stopRun(
  r: RunState,
  reason: Reason,
  budget?: BudgetName,
  person?: boolean,
): RunSummary {
  r.tally.stop(reason, budget, person);
  const s = end(r);
  // What a read in flight brings back can change nothing now, and a read the SDK under it sends
  // later (its own resend after a reconnect) would go out after the stop: cut. A write already
  // sent finishes, so that its outcome is known rather than left in doubt. Whatever ended the
  // run: one call's own signal ending it (`aborted`) cuts the other calls' reads too.
  if (!r.observeOnly && r.guard.size > 0) r.guard.cutReads(endedError("The run has ended"));
  return s;
}

/**
 * The host ends the run: attempts in flight are cut, also after a stop Governor decided (which
 * let the writes already sent run on: the host may give up on them; its summary stays). Idempotent.
 */
export function endByHost(r: RunState): RunSummary {
  if (!r.hostEnded && (!r.ended || (!r.observeOnly && r.guard.size > 0))) {
    // Calls still running are aborted: the run did not complete.
    if (!r.ended && r.inFlight > 0) r.tally.stop("aborted", undefined, false);
    r.hostEnded = true;
    // The reason is an Error (with a stack) only when something listens for it.
    if (r.hostEnd !== undefined) r.hostEnd.abort(hostEndReason(r));
    if (r.guard.size > 0) r.guard.cutAll(hostEndReason(r));
  }
  return end(r);
}

// What cuts a call short, and host hooks waited for within those bounds.

/** What these read of a call (call-state.ts `CallState`, named here without importing it). */
interface CallState {
  readonly run: RunState;
  readonly call: { readonly signal?: AbortSignal | undefined };
}

/** Whether the host aborted the run or this call, or ended the run. */
export function isAborted(state: CallState): boolean {
  const r = state.run;
  return r.signal?.aborted === true || r.hostEnded || state.call.signal?.aborted === true;
}

/** Why the call is cut, when it is (the run's signal, the host's end, the call's signal). */
export function abortReason(state: CallState): { reason: Error } | undefined {
  const r = state.run;
  if (r.signal?.aborted) return { reason: abortError(r.signal) };
  if (r.hostEnded) return { reason: hostEndReason(r) };
  const own = state.call.signal;
  return own?.aborted ? { reason: abortError(own) } : undefined;
}

/** What cuts a pending store answer: the run's signal, the host's end, the call's signal. */
export function cutters(state: CallState): AbortSignal[] {
  const r = state.run;
  return [r.signal, hostEndSignal(r), state.call.signal].filter(
    (s): s is AbortSignal => s !== undefined,
  );
}

/** What wakes a wait (a backoff, a hook, a verify step): a cut, or any end of the run. */
export function wakers(state: CallState): AbortSignal[] {
  return [...cutters(state), runEndedSignal(state.run)];
}

/**
 * Waits for a host hook, but not past the run's signal, its end or its deadline: a hook nobody
 * answers (an approval UI left open) must not hold the call. Then `fallback` is the answer.
 */
export async function bounded<R>(
  state: CallState,
  fn: () => MaybePromise<R>,
  fallback: R,
): Promise<R> {
  const r = state.run;
  const left = r.deadline - r.core.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort = () => {};
  const cut = new Promise<R>((resolve) => {
    onAbort = () => resolve(fallback);
    if (left <= MAX_TIMER_MS) timer = setTimeout(onAbort, Math.max(0, left));
    for (const s of wakers(state)) s.addEventListener("abort", onAbort, { once: true });
  });
  try {
    if (wakers(state).some((s) => s.aborted)) return fallback;
    const answer = guardedAsync(fn).then((a) => (a === undefined ? fallback : a));
    return await Promise.race([answer, cut]);
  } finally {
    clearTimeout(timer);
    for (const s of wakers(state)) s.removeEventListener("abort", onAbort);
  }
}
