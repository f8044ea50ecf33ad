// The attempt loop: one attempt (claim, execute, bounded by the run's cuts), what it came to, and
// the retries a failure asks for.
import pRetry from "p-retry";
import { failureFromResult } from "../judge/failure.ts";
import type { MaybePromise } from "../types.ts";
import type { LiveAttempt } from "./attempt-guard.ts";
import { updateBreaker } from "./breaker-steps.ts";
import { type CallState, noteResult, noteSuccess } from "./call-state.ts";
import { RetryRequest } from "./control.ts";
import { abortReason, isAborted, wakers } from "./cuts.ts";
import { emitCall } from "./events.ts";
import { judge, toFailure } from "./judge-failure.ts";
import { claimAndCount, settle, unsentAs } from "./ledger.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { dropClock, keepClock } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import { storeAfterEffect, storeOp } from "./store-steps.ts";
import type { AttemptContext, CallOutcome, Executor } from "./types.ts";
import { endedError, guardedAsync, sleep } from "./waits.ts";

/** What one attempt came to. */
export type Performed<T> = { value: T } | { thrown: unknown; deadlineHit: boolean };

/**
 * What an attempt that ended leads to, when its caller asked for the call's outcome rather than
 * for what the attempt came to: `thrown` says whether `value` is what the executor threw.
 */
export type Landing<T> = (
  state: CallState,
  execute: Executor<T>,
  thrown: boolean,
  value: unknown,
  deadlineHit: boolean,
) => MaybePromise<CallOutcome<T>>;

// `new Promise(grab)` hands its resolving functions over here: no closure per promise. They are
// taken at once and the slots emptied (a resolving function holds its promise, and so its value).
const unset = (): void => {};
let grabbedResolve: (value: unknown) => void = unset;
function grab(resolve: (value: unknown) => void): void {
  grabbedResolve = resolve;
}

/**
 * What watches an executor's promise and stands for its attempt in the run's guard: a pair of
 * handlers and a cut, made once and reused by later attempts (of any run) once that promise has
 * settled, so an attempt makes no closure of its own.
 */
class Watch {
  attempt: Attempt<unknown> | undefined = undefined;
  // Called once per watch (the intrinsic `then`, see `run`); a watch idle again ignores a call.
  readonly onValue = (value: unknown): void => {
    const attempt = this.attempt;
    if (attempt === undefined) return;
    release(this);
    attempt.settled(false, value, false);
  };
  readonly onThrown = (thrown: unknown): void => {
    const attempt = this.attempt;
    if (attempt === undefined) return;
    release(this);
    attempt.settled(true, thrown, false);
  };
  /** Cuts the attempt it watches (held by the run's guard and the call while the attempt runs). */
  readonly cut: LiveAttempt = (reason, deadlineHit) => this.attempt?.cut(reason, deadlineHit);
}

/** Watches no longer watching anything, for the next attempts. */
const idle: Watch[] = [];
const MAX_IDLE = 64;

function watch(attempt: Attempt<unknown>): Watch {
  const w = idle.pop() ?? new Watch();
  w.attempt = attempt;
  return w;
}

function release(w: Watch): void {
  w.attempt = undefined;
  if (idle.length < MAX_IDLE) idle.push(w);
}

/** What a cut attempt keeps: its reason, its signal's controller and abort listeners. */
interface Aborting {
  controller: AbortController | undefined;
  stopped: { reason: unknown } | undefined;
  listeners: ((reason: unknown) => void)[] | undefined;
}

/**
 * What an executor receives, and the attempt in flight. Its signal is made on first read: an
 * executor that never reads it (a plain function, or an adapter told through `onAbort`) costs no
 * AbortController. What the run keeps of the attempt is private: the executor sees only the
 * context. The key, the arguments and `_meta` are the call's, the same for each of its attempts.
 */
class Attempt<T> implements AttemptContext {
  /** Made when the signal is read, a listener added or the attempt cut. */
  #abort: Aborting | undefined = undefined;
  readonly #state: CallState;
  readonly #execute: Executor<T>;
  /** Set: the attempt's promise resolves with the call's outcome, not with what it came to. */
  readonly #land: Landing<T> | undefined;
  /** Resolves the attempt's promise; undefined once the attempt ended (or before it ran). */
  #resolve: ((value: unknown) => void) | undefined = undefined;
  /** Waits before sending in progress (`beforeSending`): cut now, the attempt left nothing. */
  #unsent = 0;
  /** Watches the executor's promise while the attempt runs. */
  #watch: Watch | undefined = undefined;

  constructor(
    state: CallState,
    execute: Executor<T>,
    land: Landing<T> | undefined,
    readonly attempt: number,
    readonly remainingMs: number,
  ) {
    this.#state = state;
    this.#execute = execute;
    this.#land = land;
  }

  get idempotencyKey(): string | undefined {
    return this.#state.key;
  }

  get args(): Readonly<Record<string, unknown>> {
    return this.#state.args;
  }

  get meta(): Readonly<Record<string, unknown>> {
    return this.#state.meta;
  }

  onAbort(listener: (reason: unknown) => void): void {
    const a = this.#abort;
    if (a?.stopped) listener(a.stopped.reason);
    else if (this.#resolve === undefined) listener(endedError("The attempt has ended"));
    else if (a === undefined) this.#abort = aborting(undefined, [listener]);
    else if (a.listeners === undefined) a.listeners = [listener];
    else a.listeners.push(listener);
  }

  beforeSending<R>(wait: Promise<R>): Promise<R> {
    this.#unsent += 1;
    return Promise.resolve(wait).finally(() => {
      this.#unsent -= 1;
    });
  }

  get signal(): AbortSignal {
    if (this.#resolve === undefined) return AbortSignal.abort();
    this.#abort ??= aborting(undefined, undefined);
    const a = this.#abort;
    if (a.stopped) return AbortSignal.abort(a.stopped.reason);
    a.controller ??= new AbortController();
    return a.controller.signal;
  }

  /**
   * Runs the executor, bounded by the run's guard and the call's cut. Resolves with what the
   * attempt came to, or with the call's outcome when the attempt was made with a landing.
   */
  run(): Promise<unknown> {
    const promise = new Promise(grab);
    this.#resolve = grabbedResolve;
    grabbedResolve = unset;
    const state = this.#state;
    const { guard } = state.run;
    const w = watch(this as Attempt<unknown>);
    this.#watch = w;
    // Only a call with its own signal cuts its attempt itself.
    if (state.call.signal !== undefined) state.cut = w.cut;
    guard.enter(w.cut);
    let running: Promise<T>;
    try {
      running = Promise.resolve(this.#execute(this));
    } catch (thrown) {
      Attempt.#finish(this, true, thrown, false, false);
      release(w);
      return promise;
    }
    // Promise.prototype's `then` (read now: a host may have wrapped it), not one set on the
    // executor's promise itself: that one may call a handler twice, or keep it and call it later,
    // and hand a late answer to the watch's next attempt.
    Promise.prototype.then.call(running, w.onValue, w.onThrown);
    // After the reactions above: an executor that answered at once is done before the check.
    if (this.#resolve !== undefined) guard.started();
    return promise;
  }

  /** The executor's promise settled (the watch's handlers, in a reaction of their own). */
  settled(thrown: boolean, value: unknown, deadlineHit: boolean): void {
    Attempt.#finish(this, thrown, value, deadlineHit, true);
  }

  /** Cuts the attempt: its signal aborts with `reason`, its abort listeners are called. */
  cut(reason: unknown, deadlineHit: boolean): void {
    if (this.#resolve === undefined) return;
    if (this.#unsent > 0) this.#state.cutUnsent = true;
    Attempt.#stop(this, reason);
    Attempt.#finish(this, true, reason, deadlineHit, false);
  }

  // Static: a private method would give every context a brand (a field more).
  static #stop<U>(self: Attempt<U>, reason: unknown): void {
    self.#abort ??= aborting(undefined, undefined);
    const a = self.#abort;
    a.stopped = { reason };
    a.controller?.abort(reason);
    const listeners = a.listeners;
    a.listeners = undefined;
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        listener(reason);
      } catch {
        // A listener's error must not keep the attempt from ending: dropped, as a hook's is.
      }
    }
  }

  /**
   * The attempt ended. `inReaction`: called from a promise reaction of its own, so the call's
   * next steps may run now; else (a cut, inside whatever cut it, or a synchronous throw, inside
   * `run.call`) they run a microtask later.
   */
  static #finish<U>(
    self: Attempt<U>,
    thrown: boolean,
    value: unknown,
    deadlineHit: boolean,
    inReaction: boolean,
  ): void {
    const resolve = self.#resolve;
    if (resolve === undefined) return;
    // The attempt ended: its abort listeners are dropped, never called.
    self.#resolve = undefined;
    if (self.#abort !== undefined) self.#abort.listeners = undefined;
    const state = self.#state;
    const w = self.#watch;
    if (w !== undefined) {
      self.#watch = undefined;
      state.run.guard.leave(w.cut);
      if (state.cut === w.cut) state.cut = undefined;
    }
    const land = self.#land;
    if (land === undefined) {
      resolve(thrown ? { thrown: value, deadlineHit } : { value });
      return;
    }
    if (inReaction) landNow(land, state, self.#execute, thrown, value, deadlineHit, resolve);
    else landLater(land, state, self.#execute, thrown, value, deadlineHit, resolve);
  }
}

/** `landNow` a microtask later (apart: its closure would make every `#finish` a context). */
function landLater<T>(
  land: Landing<T>,
  state: CallState,
  execute: Executor<T>,
  thrown: boolean,
  value: unknown,
  deadlineHit: boolean,
  resolve: (value: unknown) => void,
): void {
  queueMicrotask(() => landNow(land, state, execute, thrown, value, deadlineHit, resolve));
}

/** Resolves an attempt's promise with the call's outcome, or rejects it with what `land` threw. */
function landNow<T>(
  land: Landing<T>,
  state: CallState,
  execute: Executor<T>,
  thrown: boolean,
  value: unknown,
  deadlineHit: boolean,
  resolve: (value: unknown) => void,
): void {
  try {
    resolve(land(state, execute, thrown, value, deadlineHit));
  } catch (error) {
    resolve(Promise.reject(error));
  }
}

function aborting(
  controller: AbortController | undefined,
  listeners: ((reason: unknown) => void)[] | undefined,
): Aborting {
  return { controller, stopped: undefined, listeners };
}

function isErrorResult(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && (value as { isError?: unknown }).isError === true
  );
}

/**
 * Performs one attempt, bounded by the run's signal, its end, the call's signal and the deadline
 * even if `execute` is not: the run's guard holds one timer and one listener for all attempts in
 * flight, and the attempt's own controller is made only if the executor reads `ctx.signal`.
 * Never rejects.
 */
function perform<T>(state: CallState, execute: Executor<T>): Promise<Performed<T>> {
  const cutBy = abortReason(state);
  if (cutBy !== undefined) return Promise.resolve({ thrown: cutBy.reason, deadlineHit: false });
  return new Attempt<T>(
    state,
    execute,
    undefined,
    state.attempts,
    state.remainingMs,
  ).run() as Promise<Performed<T>>;
}

/**
 * Before an attempt: the run's end, an abort and the deadline, then the ledger claim and the
 * retry-budget count. Undefined lets the attempt go; its time left is kept on the call.
 */
export function beforeAttempt<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  const r = state.run;
  // A parallel call may have stopped the run during this call's backoff: no more retries. (A
  // first attempt admitted before the stop still runs: its budget was granted.)
  if (r.ended && !r.observeOnly && state.attempts > 0) return endedOutcome(state);
  if (isAborted(state)) return preflightStop(state, "aborted");
  // The first attempt of a call that has awaited nothing yet takes preflight's reading (read here,
  // not returned by a call: a number returned is a heap number unless the call is inlined).
  keepClock(r, state);
  const remainingMs = r.deadline - r.clockAt;
  if (remainingMs <= 0 && !r.observeOnly) {
    dropClock(r);
    return preflightStop(state, "deadline_exceeded");
  }
  // An int32 is kept as a small integer, not a heap number per call (ms left fit unless the
  // deadline is more than 24 days away).
  state.remainingMs = (remainingMs | 0) === remainingMs ? remainingMs | 0 : remainingMs;
  try {
    return claimAndCount<T>(state);
  } finally {
    dropClock(r);
  }
}

/** Sends an attempt the claim let go; never rejects. */
export function send<T>(state: CallState, execute: Executor<T>): Promise<Performed<T>> {
  const r = state.run;
  // A verify answer speaks of the attempts before it: this new attempt may write again.
  state.verified = undefined;
  state.attempts += 1;
  r.tally.attempt();
  r.inFlight += 1;
  return perform(state, execute);
}

/**
 * Sends an attempt the claim let go, and resolves with what `land` makes of it (the call's
 * outcome): with an executor that answers, `land` runs in the executor's own reaction, with no
 * promise in between.
 */
export function sendAndLand<T>(
  state: CallState,
  execute: Executor<T>,
  land: Landing<T>,
): Promise<CallOutcome<T>> {
  const r = state.run;
  state.verified = undefined;
  state.attempts += 1;
  r.tally.attempt();
  r.inFlight += 1;
  const cutBy = abortReason(state);
  if (cutBy !== undefined) {
    return Promise.resolve().then(() => land(state, execute, true, cutBy.reason, false));
  }
  return new Attempt<T>(state, execute, land, state.attempts, state.remainingMs).run() as Promise<
    CallOutcome<T>
  >;
}

/** What an attempt came to: a value, a retry request or a terminal outcome. */
export function landed<T>(
  state: CallState,
  outcome: Performed<T>,
): MaybePromise<CallOutcome<T> | RetryRequest> {
  state.run.inFlight -= 1;
  if (state.cutUnsent) return cutUnsent(state, outcome);
  return afterAttempt(state, outcome);
}

/**
 * An attempt cut before anything was sent (it waited for a reconnect, `beforeSending`): nothing
 * is judged. Its key is released as not sent (still `uncertain` when an earlier attempt may have
 * written: `unsentAs`), and the call stops as the cut says; the stop ends the run, so later calls
 * fail at once.
 */
function cutUnsent<T>(state: CallState, outcome: Performed<T>): Promise<CallOutcome<T>> {
  state.cutUnsent = false;
  const reason = "thrown" in outcome && outcome.deadlineHit ? "deadline_exceeded" : "aborted";
  const key = state.key;
  const released =
    key === undefined ? Promise.resolve() : guardedAsync(() => settle(state, key, unsentAs(state)));
  return released.then(() => preflightStop<T>(state, reason));
}

/** `landed`, told what the attempt came to without a `Performed` (none is made for a success). */
export function landedAs<T>(
  state: CallState,
  thrown: boolean,
  value: unknown,
  deadlineHit: boolean,
): MaybePromise<CallOutcome<T> | RetryRequest> {
  if (thrown || isErrorResult(value)) {
    return landed(state, thrown ? { thrown: value, deadlineHit } : { value: value as T });
  }
  state.run.inFlight -= 1;
  return succeeded(state, value as T);
}

/**
 * One attempt: the ledger claim and the retry-budget count, the executor, then a value, a
 * retry request or a terminal outcome.
 */
export function attemptOnce<T>(
  state: CallState,
  execute: Executor<T>,
): MaybePromise<CallOutcome<T> | RetryRequest> {
  const admitted = beforeAttempt<T>(state);
  if (isThenable(admitted)) {
    return admitted.then(
      (refused) => refused ?? send(state, execute).then((outcome) => landed(state, outcome)),
    );
  }
  return admitted ?? send(state, execute).then((outcome) => landed(state, outcome));
}

/** What an attempt came to: a success, or a failure to judge. */
function afterAttempt<T>(
  state: CallState,
  outcome: Performed<T>,
): MaybePromise<CallOutcome<T> | RetryRequest> {
  const { core } = state.run;
  if ("value" in outcome) {
    if (!isErrorResult(outcome.value)) return succeeded(state, outcome.value);
    return judge(state, failureFromResult(outcome.value as object, core.now()), outcome);
  }
  return judge(state, toFailure(state, outcome.thrown, outcome.deadlineHit), outcome);
}

/** The outcome of a call that succeeded now (not replayed), noted for loops and events. */
function ok<T>(state: CallState, value: T): CallOutcome<T> {
  noteResult(state, value);
  noteSuccess(state);
  emitCall(state, "ok");
  return { kind: "ok", value, attempts: state.attempts, replayed: false };
}

/** A success: the ledger and the breaker are told, then the value goes back. */
function succeeded<T>(state: CallState, value: T): MaybePromise<CallOutcome<T>> {
  // Learning touches a success only when the run has failed before (see outcome-tracker.ts).
  const { learning } = state.run;
  if (learning !== undefined && !state.run.observeOnly) return learned(state, learning, value);
  return told(state, value);
}

// The closures of a step that may wait live in functions of their own: a function whose
// parameters a closure captures makes a context on every call, even when it makes no closure.

/** A success in a run that failed before: learning is told, then the ledger and the breaker. */
function learned<T>(
  state: CallState,
  learning: NonNullable<CallState["run"]["learning"]>,
  value: T,
): MaybePromise<CallOutcome<T>> {
  const written = learning.succeeded(state, state.tool, (op, fn) => storeOp(state, op, fn));
  return isThenable(written) ? written.then(() => told(state, value)) : told(state, value);
}

/** The ledger and the breaker told of a success, then the value goes back. */
function told<T>(state: CallState, value: T): MaybePromise<CallOutcome<T>> {
  return state.key === undefined ? toldBreaker(state, value) : toldKeyed(state, state.key, value);
}

/** The breaker told of a success, then the value goes back. */
function toldBreaker<T>(state: CallState, value: T): MaybePromise<CallOutcome<T>> {
  const updated = updateBreaker(state, "success");
  return isThenable(updated) ? okAfter(updated, state, value) : ok(state, value);
}

/** `ok` once a pending store step is done. */
function okAfter<T>(
  pending: Promise<unknown>,
  state: CallState,
  value: T,
): Promise<CallOutcome<T>> {
  return pending.then(() => ok(state, value));
}

/**
 * `told` for a keyed call: its key is settled first. A settle the store answers at once (the
 * memory store) makes no closure; a throw of the breaker step is not taken for the settle's.
 */
function toldKeyed<T>(state: CallState, key: string, value: T): MaybePromise<CallOutcome<T>> {
  let settled: MaybePromise<void>;
  try {
    settled = settle(state, key, "succeeded", state.tool.idempotency.replay ? value : undefined);
  } catch (error) {
    return settleFailed(state, value, error);
  }
  return isThenable(settled) ? settledLater(state, value, settled) : toldBreaker(state, value);
}

/** A settle the store answers later (the closures in a function of their own: see above). */
function settledLater<T>(
  state: CallState,
  value: T,
  pending: Promise<void>,
): Promise<CallOutcome<T>> {
  return pending.then(
    () => toldBreaker(state, value),
    (error: unknown) => settleFailed(state, value, error),
  );
}

/**
 * The settle of a write that succeeded failed: the write happened and its answer is here, so the
 * model gets it. The entry stays pending, so after its lease a repeat of this logical call is
 * refused, never re-run.
 */
function settleFailed<T>(state: CallState, value: T, error: unknown): MaybePromise<CallOutcome<T>> {
  storeAfterEffect(state, error);
  return toldBreaker(state, value);
}

/** The attempts after the first asked for a retry: p-retry orchestrates them. */
export async function retryAfter<T>(
  state: CallState,
  execute: Executor<T>,
  first: RetryRequest,
): Promise<CallOutcome<T>> {
  if (first.delayMs > 0) await sleep(first.delayMs, ...wakers(state));
  return await pRetry(
    async () => {
      const outcome = await attemptOnce(state, execute);
      if (outcome instanceof RetryRequest) throw outcome;
      return outcome;
    },
    {
      retries: 1000,
      minTimeout: 0,
      maxTimeout: 0,
      factor: 1,
      randomize: false,
      shouldRetry: ({ error }) => error instanceof RetryRequest,
      onFailedAttempt: async ({ error }) => {
        if (error instanceof RetryRequest && error.delayMs > 0) {
          await sleep(error.delayMs, ...wakers(state));
        }
      },
    },
  );
}
