// The attempt loop (docs/architecture.md §1): admit, send, then settle a success or judge a
// failure, for the first attempt and every retry alike. p-retry drives the retries.
import pRetry from "p-retry";
import { updateBreaker } from "./breaker-steps.ts";
import { type CallState, noteResult, noteSuccess } from "./call-state.ts";
import { emitCall } from "./events.ts";
import { resolveFailure, type Sent } from "./failed-attempt.ts";
import { drive, type Flow } from "./flow.ts";
import { claimAndCount, ledgerMove, settle } from "./ledger.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { abortReason, dropClock, isAborted, keepClock, wakers } from "./run-state.ts";
import { storeAfterEffect, storeOp } from "./store-steps.ts";
import type { AttemptContext, CallOutcome, Executor } from "./types.ts";
import { endedError, guardedAsync, sleep } from "./waits.ts";

/** What an attempt comes to: the call's outcome, or a failure to judge. */
type Attempted<T> = { readonly outcome: CallOutcome<T> } | { readonly failed: Sent };

/**
 * The attempts of one call: the first, then the retries its judged failures ask for. The first
 * runs here, synchronously up to its executor when the store answers at once; p-retry runs the
 * retries (its `async` loop, with its option handling, is paid only by a call that failed).
 */
export function* attemptLoop<T>(state: CallState, execute: Executor<T>): Flow<CallOutcome<T>> {
  const first = yield* attempt<T>(state, execute);
  if ("outcome" in first) return first.outcome;
  const verdict = yield* resolveFailure<T>(state, first.failed);
  if (verdict.retryInMs === undefined) return verdict.outcome;
  return (yield retries(state, execute, verdict.retryInMs)) as CallOutcome<T>;
}

/** One attempt: admitted (ledger claim, retry-budget count), sent, and a success settled. */
function* attempt<T>(state: CallState, execute: Executor<T>): Flow<Attempted<T>> {
  const refused = (yield* admit<T>(state)) as CallOutcome<T> | undefined;
  if (refused !== undefined) return { outcome: refused };
  const sent = (yield send(state, execute)) as Sent;
  state.run.inFlight -= 1;
  if (state.cutUnsent) return { outcome: yield* cutUnsent<T>(state, sent) };
  if (sent.thrown || isErrorResult(sent.value)) return { failed: sent };
  return { outcome: yield* succeeded(state, sent.value as T) };
}

/** What p-retry is handed as an attempt's failure: the attempt, judged in `onFailedAttempt`. */
class FailedAttempt extends Error {
  constructor(readonly sent: Sent) {
    super("the attempt failed");
  }
}

/**
 * The retries after a first attempt whose failure asked for one, `delayMs` from now. p-retry runs
 * each attempt; a failed one reaches `onFailedAttempt`, which resolves it (a retry, or the call's
 * outcome), and `shouldRetry` says which, after the decision's backoff. That backoff is the
 * decision's own (it honours a server's Retry-After and the deadline, which p-retry's cannot), so
 * p-retry adds none; its `retries` is the attempts the policy has left, its `signal` whatever cuts
 * the call (the run's signal or end, the host's end, the call's signal).
 */
async function retries<T>(
  state: CallState,
  execute: Executor<T>,
  delayMs: number,
): Promise<CallOutcome<T>> {
  let retryInMs: number | undefined = delayMs;
  /** The call's outcome, once an attempt or a judgement came to one. */
  let outcome: CallOutcome<T> | undefined;
  /** What the host must see thrown (a `HostError`), never taken for a cut. */
  let escaped: { error: unknown } | undefined;
  const cut = new AbortController();
  const signals = wakers(state);
  const onCut = (event: Event) => cut.abort((event.target as AbortSignal).reason);
  for (const s of signals) {
    if (s.aborted) cut.abort(s.reason);
    else s.addEventListener("abort", onCut, { once: true });
  }
  const step = async <R>(flow: Flow<R>): Promise<R> => {
    try {
      return await drive(flow);
    } catch (error) {
      escaped = { error };
      throw error;
    }
  };
  try {
    await sleep(delayMs, cut.signal);
    await pRetry(
      async () => {
        const next = await step(attempt<T>(state, execute));
        if ("failed" in next) throw new FailedAttempt(next.failed);
        outcome = next.outcome;
      },
      {
        retries: Math.max(0, state.tool.retry.attempts - 2),
        minTimeout: 0,
        signal: cut.signal,
        onFailedAttempt: async ({ error }) => {
          if (!(error instanceof FailedAttempt)) return;
          const verdict = await step(resolveFailure<T>(state, error.sent));
          retryInMs = verdict.retryInMs;
          if (verdict.retryInMs === undefined) outcome = verdict.outcome;
        },
        shouldRetry: async () => {
          if (escaped !== undefined || retryInMs === undefined) return false;
          await sleep(retryInMs, cut.signal);
          return true;
        },
      },
    );
  } catch (error) {
    if (escaped !== undefined) throw escaped.error;
    // p-retry throws the last failure once `shouldRetry` said no: the judgement's outcome stands.
    if (outcome === undefined) {
      if (isAborted(state)) return preflightStop<T>(state, "aborted");
      const r = state.run;
      if (r.ended && !r.observeOnly) return endedOutcome<T>(state);
      if (!(error instanceof FailedAttempt)) throw error;
      return preflightStop<T>(state, "retries_exhausted");
    }
  } finally {
    for (const s of signals) s.removeEventListener("abort", onCut);
  }
  return outcome as CallOutcome<T>;
}

/**
 * Before an attempt: the run's end, an abort and the deadline, then the ledger claim and the
 * retry-budget count. Undefined lets the attempt go; its time left is kept on the call.
 */
function* admit<T>(state: CallState): Flow<CallOutcome<T> | undefined> {
  const r = state.run;
  // A parallel call may have stopped the run during this call's backoff: no more retries. (A
  // first attempt admitted before the stop still runs: its budget was granted.)
  if (r.ended && !r.observeOnly && state.attempts > 0) return endedOutcome<T>(state);
  if (isAborted(state)) return preflightStop<T>(state, "aborted");
  // The first attempt of a call that has awaited nothing yet takes preflight's clock reading.
  keepClock(r, state);
  const remainingMs = r.deadline - r.clockAt;
  if (remainingMs <= 0 && !r.observeOnly) {
    dropClock(r);
    return preflightStop<T>(state, "deadline_exceeded");
  }
  // An int32 is kept as a small integer, not a heap number per call.
  state.remainingMs = (remainingMs | 0) === remainingMs ? remainingMs | 0 : remainingMs;
  try {
    return yield* claimAndCount<T>(state);
  } finally {
    dropClock(r);
  }
}

/** Sends an attempt the claim let go: its promise never rejects. */
function send(state: CallState, execute: Executor<unknown>): Promise<Sent> {
  const r = state.run;
  // A verify answer speaks of the attempts before it: this new attempt may write again.
  state.verified = undefined;
  state.attempts += 1;
  r.tally.attempt();
  r.inFlight += 1;
  const cutBy = abortReason(state);
  if (cutBy !== undefined) {
    return Promise.resolve({ thrown: true, value: cutBy.reason, deadlineHit: false });
  }
  return new Attempt(state, state.attempts, state.remainingMs).send(execute);
}

/**
 * An attempt cut before anything was sent (it waited for a reconnect, `beforeSending`): nothing
 * is judged. Its key is settled as not sent, and the call stops as the cut says; the stop ends
 * the run, so later calls fail at once.
 */
function* cutUnsent<T>(state: CallState, sent: Sent): Flow<CallOutcome<T>> {
  state.cutUnsent = false;
  const key = state.key;
  if (key !== undefined) {
    yield guardedAsync(() => drive(settle(state, key, ledgerMove(state, "not_sent"))));
  }
  return preflightStop<T>(state, sent.deadlineHit ? "deadline_exceeded" : "aborted");
}

/**
 * A success: learning (only in a run that failed before), the ledger and the breaker are told,
 * then the value goes back.
 */
function* succeeded<T>(state: CallState, value: T): Flow<CallOutcome<T>> {
  const { learning, observeOnly } = state.run;
  if (learning !== undefined && !observeOnly) {
    yield learning.succeeded(state, state.tool, (op, fn) => storeOp(state, op, fn));
  }
  const { key } = state;
  if (key !== undefined) {
    const kept = state.tool.idempotency.replay ? value : undefined;
    try {
      yield* settle(state, key, ledgerMove(state, "answered"), kept);
    } catch (error) {
      // The write happened and its answer is here: the model gets it. The entry stays pending, so
      // after its lease a repeat of this logical call is refused, never re-run.
      storeAfterEffect(state, error);
    }
  }
  yield updateBreaker(state, "success");
  noteResult(state, value);
  noteSuccess(state);
  emitCall(state, "ok");
  return { kind: "ok", value, attempts: state.attempts, replayed: false };
}

/** What the attempt came to is a failure: the executor threw, or answered `isError: true`. */
function isErrorResult(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && (value as { isError?: unknown }).isError === true
  );
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
 * AbortController. The key, the arguments and `_meta` are the call's, the same for each attempt.
 */
class Attempt implements AttemptContext {
  #abort: Aborting | undefined = undefined;
  readonly #state: CallState;
  /** Ends the attempt's promise; undefined once the attempt ended (or before it was sent). */
  #end: ((sent: Sent) => void) | undefined = undefined;
  /** Waits before sending in progress (`beforeSending`): cut now, the attempt left nothing. */
  #unsent = 0;
  /** Cuts this attempt (held by the run's guard, and by the call while the attempt runs). */
  readonly #cut = (reason: unknown, deadlineHit: boolean): void => this.cut(reason, deadlineHit);

  constructor(
    state: CallState,
    readonly attempt: number,
    readonly remainingMs: number,
  ) {
    this.#state = state;
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
    else if (this.#end === undefined) listener(endedError("The attempt has ended"));
    else if (a === undefined)
      this.#abort = { controller: undefined, stopped: undefined, listeners: [listener] };
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
    if (this.#end === undefined) return AbortSignal.abort();
    this.#abort ??= { controller: undefined, stopped: undefined, listeners: undefined };
    const a = this.#abort;
    if (a.stopped) return AbortSignal.abort(a.stopped.reason);
    a.controller ??= new AbortController();
    return a.controller.signal;
  }

  /**
   * Runs the executor, bounded by the run's guard (its signal, end and deadline) and the call's
   * own signal even if the executor is not: the attempt ends at its answer or its cut, first.
   */
  send(execute: Executor<unknown>): Promise<Sent> {
    const state = this.#state;
    const { guard } = state.run;
    const ended = new Promise<Sent>((resolve) => {
      this.#end = resolve;
    });
    // Only a call with its own signal cuts its attempt itself.
    if (state.call.signal !== undefined) state.cut = this.#cut;
    guard.enter(this.#cut);
    let running: Promise<unknown>;
    try {
      running = Promise.resolve(execute(this));
    } catch (thrown) {
      this.#finish({ thrown: true, value: thrown, deadlineHit: false });
      return ended;
    }
    // Promise.prototype's `then` (a host may have wrapped the executor's promise's own `then`,
    // which could call a handler twice, or late).
    Promise.prototype.then.call(
      running,
      (value: unknown) => this.#finish({ thrown: false, value, deadlineHit: false }),
      (thrown: unknown) => this.#finish({ thrown: true, value: thrown, deadlineHit: false }),
    );
    if (this.#end !== undefined) guard.started();
    return ended;
  }

  /** Cuts the attempt: its signal aborts with `reason`, its abort listeners are called. */
  cut(reason: unknown, deadlineHit: boolean): void {
    if (this.#end === undefined) return;
    if (this.#unsent > 0) this.#state.cutUnsent = true;
    this.#abort ??= { controller: undefined, stopped: undefined, listeners: undefined };
    const a = this.#abort;
    a.stopped = { reason };
    a.controller?.abort(reason);
    const listeners = a.listeners;
    a.listeners = undefined;
    for (const listener of listeners ?? []) {
      try {
        listener(reason);
      } catch {
        // A listener's error must not keep the attempt from ending: dropped, as a hook's is.
      }
    }
    this.#finish({ thrown: true, value: reason, deadlineHit });
  }

  /** The attempt ended, by its answer or its cut (whichever came first; the other is ignored). */
  #finish(sent: Sent): void {
    const end = this.#end;
    if (end === undefined) return;
    this.#end = undefined;
    // The attempt ended: its abort listeners are dropped, never called.
    if (this.#abort !== undefined) this.#abort.listeners = undefined;
    const state = this.#state;
    state.run.guard.leave(this.#cut);
    if (state.cut === this.#cut) state.cut = undefined;
    end(sent);
  }
}
