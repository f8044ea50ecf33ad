// The attempt loop: one attempt (claim, execute, bounded by the run's cuts), what it came to, and
// the retries a failure asks for.
import pRetry from "p-retry";
import { failureFromResult } from "../judge/failure.ts";
import type { MaybePromise } from "../types.ts";
import type { LiveAttempt } from "./attempt-guard.ts";
import { updateBreaker } from "./breaker-steps.ts";
import { type CallState, noteSignature, noteSuccess } from "./call-state.ts";
import { RetryRequest } from "./control.ts";
import { abortReason, isAborted, wakers } from "./cuts.ts";
import { emitCall } from "./events.ts";
import { judge, toFailure } from "./judge-failure.ts";
import { claimAndCount, settle } from "./ledger.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { isThenable, step } from "./store-guard.ts";
import { storeAfterEffect, storeOp } from "./store-steps.ts";
import type { AttemptContext, CallOutcome, Executor } from "./types.ts";
import { endedError, sleep } from "./waits.ts";

/** What one attempt came to. */
export type Performed<T> = { value: T } | { thrown: unknown; deadlineHit: boolean };

/**
 * What an executor receives, and the attempt in flight. Its signal is made on first read: an
 * executor that never reads it (a plain function, or an adapter told through `onAbort`) costs no
 * AbortController. What the run keeps of the attempt is private: the executor sees only the
 * context.
 */
class Attempt<T> implements AttemptContext {
  /** The attempt ended: a signal read now is already aborted. */
  #done = false;
  #controller: AbortController | undefined;
  #stopped: { reason: unknown } | undefined;
  #onAbort: ((reason: unknown) => void)[] | undefined;
  readonly #state: CallState;
  #resolve: ((outcome: Performed<T>) => void) | undefined;
  /** Cuts the attempt: held by the run's guard and the call (its own signal) while it runs. */
  readonly #cut: LiveAttempt;

  constructor(
    state: CallState,
    readonly attempt: number,
    readonly remainingMs: number,
    readonly idempotencyKey: string | undefined,
    readonly args: Readonly<Record<string, unknown>>,
    readonly meta: Readonly<Record<string, unknown>>,
  ) {
    this.#state = state;
    this.#cut = (reason: unknown, deadlineHit: boolean) => {
      this.#stop(reason);
      this.#finish({ thrown: reason, deadlineHit });
    };
  }

  onAbort(listener: (reason: unknown) => void): void {
    if (this.#stopped) listener(this.#stopped.reason);
    else if (this.#done) listener(endedError("The attempt has ended"));
    else if (this.#onAbort === undefined) this.#onAbort = [listener];
    else this.#onAbort.push(listener);
  }

  /** Cuts the attempt: its signal aborts with `reason`, its abort listeners are called. */
  #stop(reason: unknown): void {
    this.#stopped = { reason };
    this.#controller?.abort(reason);
    const listeners = this.#onAbort;
    this.#onAbort = undefined;
    if (listeners === undefined) return;
    for (const listener of listeners) {
      try {
        listener(reason);
      } catch {
        // A listener's error must not keep the attempt from ending: dropped, as a hook's is.
      }
    }
  }

  get signal(): AbortSignal {
    if (this.#done) return AbortSignal.abort();
    if (this.#stopped) return AbortSignal.abort(this.#stopped.reason);
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  /** Runs the executor, bounded by the run's guard and the call's cut. Never rejects. */
  run(execute: Executor<T>): Promise<Performed<T>> {
    return new Promise<Performed<T>>((resolve) => {
      this.#resolve = resolve;
      const state = this.#state;
      const { guard } = state.run;
      state.cut = this.#cut;
      guard.enter(this.#cut);
      let running: Promise<T>;
      try {
        running = Promise.resolve(execute(this));
      } catch (thrown) {
        this.#finish({ thrown, deadlineHit: false });
        return;
      }
      running.then(
        (value) => this.#finish({ value }),
        (thrown: unknown) => this.#finish({ thrown, deadlineHit: false }),
      );
      // After the reactions above: an executor that answered at once is done before the check.
      if (!this.#done) guard.started();
    });
  }

  #finish(outcome: Performed<T>): void {
    if (this.#done) return;
    // The attempt ended: its abort listeners are dropped, never called.
    this.#done = true;
    this.#onAbort = undefined;
    const state = this.#state;
    state.run.guard.leave(this.#cut);
    if (state.cut === this.#cut) state.cut = undefined;
    this.#resolve?.(outcome);
  }
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
function perform<T>(
  state: CallState,
  execute: Executor<T>,
  remainingMs: number,
): Promise<Performed<T>> {
  const cutBy = abortReason(state);
  if (cutBy !== undefined) return Promise.resolve({ thrown: cutBy.reason, deadlineHit: false });
  return new Attempt<T>(state, state.attempts, remainingMs, state.key, state.args, state.meta).run(
    execute,
  );
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
  const remainingMs = r.deadline - r.core.now();
  if (remainingMs <= 0 && !r.observeOnly) return preflightStop(state, "deadline_exceeded");
  state.remainingMs = remainingMs;
  return claimAndCount<T>(state);
}

/** Sends an attempt the claim let go; never rejects. */
export function send<T>(state: CallState, execute: Executor<T>): Promise<Performed<T>> {
  const r = state.run;
  // A verify answer speaks of the attempts before it: this new attempt may write again.
  state.verified = undefined;
  state.attempts += 1;
  r.tally.attempt();
  r.inFlight += 1;
  return perform(state, execute, state.remainingMs);
}

/** What an attempt came to: a value, a retry request or a terminal outcome. */
export function landed<T>(
  state: CallState,
  outcome: Performed<T>,
): MaybePromise<CallOutcome<T> | RetryRequest> {
  state.run.inFlight -= 1;
  return afterAttempt(state, outcome);
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
  noteSignature(state, { value });
  noteSuccess(state);
  emitCall(state, "ok");
  return { kind: "ok", value, attempts: state.attempts, replayed: false };
}

/** A success: the ledger and the breaker are told, then the value goes back. */
function succeeded<T>(state: CallState, value: T): MaybePromise<CallOutcome<T>> {
  // Learning touches a success only when the run has failed before (see outcome-tracker.ts).
  const learning = state.run.learning;
  if (learning !== undefined && !state.run.observeOnly) {
    const written = learning.succeeded(state, state.tool, (op, fn) => storeOp(state, op, fn));
    if (isThenable(written)) return written.then(() => told(state, value));
  }
  return told(state, value);
}

/** The ledger and the breaker told of a success, then the value goes back. */
function told<T>(state: CallState, value: T): MaybePromise<CallOutcome<T>> {
  if (state.key === undefined) {
    const updated = updateBreaker(state, "success");
    return isThenable(updated) ? updated.then(() => ok(state, value)) : ok(state, value);
  }
  const done = () => ok(state, value);
  const breaker = () => {
    const updated = updateBreaker(state, "success");
    return isThenable(updated) ? updated.then(done) : done();
  };
  const { key } = state;
  return step(
    () => settle(state, key, "succeeded", state.tool.idempotency.replay ? value : undefined),
    breaker,
    (error) => {
      // The write happened and its answer is here: the model gets it. The entry stays
      // pending, so after its lease a repeat of this logical call is refused, never re-run.
      storeAfterEffect(state, error);
      return breaker();
    },
  );
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
