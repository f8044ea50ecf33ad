// The attempt loop (docs/architecture.md §1): admit, claim, send, then settle a success, for the
// first attempt and every retry alike (the same steps, `ATTEMPT`); a failed attempt is judged by
// `judgeAndRetry`, and p-retry drives the retries its judgement asks for.
import pRetry from "p-retry";
import type { MaybePromise } from "../types.ts";
import type { LiveAttempt, WatchedAttempt } from "./attempt-guard.ts";
import { updateBreaker } from "./breaker-steps.ts";
import { type CallState, noteResult, noteSuccess, type Sent } from "./call-state.ts";
import { holdHandOver, noteSettleAnswer } from "./doubt.ts";
import { emitCall } from "./events.ts";
import { resolveFailure, settleUnjudged } from "./failed-attempt.ts";
import { ask, runSteps, type Step, type StepAnswer, type Waiting } from "./flow.ts";
import { handOver, handOverWrites, handsOverLater } from "./kept-answer.ts";
import {
  claim,
  countFirst,
  ledgerMove,
  settle,
  settleKey,
  settleUnsent,
  stillSendable,
} from "./ledger.ts";
import { endedOutcome, preflightStop } from "./outcomes.ts";
import { abortReason, dropClock, isAborted, keepClock, wakers } from "./run-state.ts";
import { storeAfterEffect, storeOp } from "./store-steps.ts";
import type { AttemptContext, CallOutcome, Executor } from "./types.ts";
import { deadlineError, endedError, sleep } from "./waits.ts";

/**
 * One attempt, the first and every retry: admitted, its key claimed, the first counted against the
 * server's retry budget, sent, and a success settled. A failed attempt ends with no outcome: it is
 * judged next (`judgeAndRetry`), its answer in `state.sent`.
 */
export const ATTEMPT: readonly Step[] = [admit, claim, countFirst, stillSendable, send, landed];

/** Before `resumeWith` names the steps after `send`. */
const NO_STEPS: readonly Step[] = [];

/**
 * A success's steps: learning told, the key settled `succeeded`, the breaker told, the answer
 * handed over (its write's entry freed, or its answer kept), the value.
 */
const SUCCEEDED: readonly Step[] = [learnSuccess, settleSuccess, breakerSuccess, answerOut, ok];

/** A success handed over later (`handingOver`): counted already. */
const HANDED_OVER: readonly Step[] = [
  learnSuccess,
  settleSuccess,
  breakerSuccess,
  answerOut,
  handedOk,
];

/**
 * Before an attempt: the run's end, an abort and the deadline. Undefined lets the attempt go; its
 * time left is kept on the call.
 */
function admit(state: CallState): StepAnswer {
  const r = state.run;
  // A parallel call may have stopped the run during this call's backoff: no more retries. (A
  // first attempt comes here from preflight, which checked the run's end; one that waited since
  // then, on the store or the host, is stopped before it sends: ledger.ts `stillSendable`.)
  if (r.ended && !r.observeOnly && state.attempts > 0) return endedOutcome(state);
  if (isAborted(state)) return preflightStop(state, "aborted");
  // The first attempt of a call that has awaited nothing yet takes preflight's clock reading.
  keepClock(r, state);
  const remainingMs = r.deadline - r.clockAt;
  if (remainingMs <= 0 && !r.observeOnly) return preflightStop(state, "deadline_exceeded");
  // An int32 is kept as a small integer, not a heap number per call.
  state.remainingMs = (remainingMs | 0) === remainingMs ? remainingMs | 0 : remainingMs;
  return undefined;
}

/**
 * Sends an attempt the admission let go; what it comes to is kept in `state.sent`. The attempt in
 * flight runs the steps after this one itself when it ends (flow.ts `Waiting`).
 */
function send(state: CallState): Promise<undefined> | Waiting {
  const r = state.run;
  // The admission is over: its clock reading is done with.
  dropClock(r);
  // A verify answer speaks of the attempts before it: this new attempt may write again.
  state.verified = undefined;
  state.attempts += 1;
  r.tally.attempt();
  r.inFlight += 1;
  const cutBy = abortReason(state);
  if (cutBy !== undefined) {
    state.sent = { thrown: true, value: cutBy.reason, deadlineHit: false, wasCut: true };
    return Promise.resolve(undefined);
  }
  return new Attempt(state).send(state.execute as Executor<unknown>);
}

/**
 * What the attempt came to: cut before it was sent, a failure (judged next: no outcome), or a
 * success, settled.
 */
function landed(state: CallState): MaybePromise<StepAnswer> {
  const sent = state.sent as Sent;
  state.run.inFlight -= 1;
  if (state.cutUnsent) return cutUnsent(state, sent);
  if (sent.thrown || isErrorResult(sent.value)) return undefined;
  if (handsOverLater(state)) return handingOver(state);
  return runSteps(state, SUCCEEDED);
}

/**
 * A success handed over later (kept-answer.ts `handOver`): marked as such until its steps end, so
 * that an identical call of this process that meets its entry waits for its answer to be kept.
 */
async function handingOver(state: CallState): Promise<StepAnswer> {
  const release = holdHandOver(state);
  // Counted at once: an identical call without `callId` sent meanwhile is a new logical call, not
  // this one's replay (its key is another), and it meets this call's entry in the index.
  noteSuccess(state);
  try {
    return await runSteps(state, HANDED_OVER);
  } finally {
    // Writes the hand-over left going on past a cut: identical calls wait for them too.
    const writes = handOverWrites(state);
    if (writes === undefined) release();
    else void writes.then(release);
  }
}

/**
 * A failed attempt judged (failed-attempt.ts), and the retries its judgement asks for: p-retry
 * runs `ATTEMPT` again after the decision's backoff. Plain `async`: only a call that failed pays.
 */
export async function judgeAndRetry(state: CallState): Promise<CallOutcome<unknown>> {
  const verdict = await resolveFailure(state, state.sent as Sent);
  if (verdict.retryInMs === undefined) return verdict.outcome;
  return retries(state, verdict.retryInMs);
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
async function retries(state: CallState, delayMs: number): Promise<CallOutcome<unknown>> {
  let retryInMs: number | undefined = delayMs;
  /** The call's outcome, once an attempt or a judgement came to one. */
  let outcome: CallOutcome<unknown> | undefined;
  /** What the host must see thrown (a `HostError`), never taken for a cut. */
  let escaped: { error: unknown } | undefined;
  /** The last failed attempt, and the last handed to `onFailedAttempt` (none once p-retry is cut). */
  let failed: FailedAttempt | undefined;
  let judged: FailedAttempt | undefined;
  const cut = new AbortController();
  const signals = wakers(state);
  const onCut = (event: Event) => cut.abort((event.target as AbortSignal).reason);
  for (const s of signals) {
    if (s.aborted) cut.abort(s.reason);
    else s.addEventListener("abort", onCut, { once: true });
  }
  const step = async <R>(run: () => MaybePromise<R>): Promise<R> => {
    try {
      return await run();
    } catch (error) {
      escaped = { error };
      throw error;
    }
  };
  try {
    await sleep(delayMs, cut.signal);
    await pRetry(
      async () => {
        const next = await step(() => runSteps(state, ATTEMPT));
        if (next === undefined) {
          failed = new FailedAttempt(state.sent as Sent);
          throw failed;
        }
        outcome = next;
      },
      {
        retries: Math.max(0, state.tool.retry.attempts - 2),
        minTimeout: 0,
        signal: cut.signal,
        onFailedAttempt: async ({ error }) => {
          if (!(error instanceof FailedAttempt)) return;
          judged = error;
          const verdict = await step(() => resolveFailure(state, error.sent));
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
    // Cut as an attempt's failure came in: p-retry judged nothing, so its key is settled here.
    if (failed !== judged) await settleUnjudged(state);
    // p-retry throws the last failure once `shouldRetry` said no: the judgement's outcome stands.
    if (outcome === undefined) {
      if (isAborted(state)) return preflightStop(state, "aborted");
      const r = state.run;
      if (r.ended && !r.observeOnly) return endedOutcome(state);
      if (!(error instanceof FailedAttempt)) throw error;
      return preflightStop(state, "retries_exhausted");
    }
  } finally {
    for (const s of signals) s.removeEventListener("abort", onCut);
  }
  return outcome as CallOutcome<unknown>;
}

/**
 * An attempt cut before anything was sent (it waited for a reconnect, `beforeSending`): nothing
 * is judged. Its key is settled as not sent, and the call stops as the cut says; the stop ends
 * the run, so later calls fail at once.
 */
async function cutUnsent(state: CallState, sent: Sent): Promise<CallOutcome<unknown>> {
  state.cutUnsent = false;
  if (state.key !== undefined) await settleUnsent(state);
  if (sent.deadlineHit) return preflightStop(state, "deadline_exceeded");
  // Cut because a stop Governor decided ended the run (`beforeSending`): the run's reason.
  const r = state.run;
  if (r.ended !== undefined && !r.hostEnded) return endedOutcome(state, state.attempts > 1);
  return preflightStop(state, "aborted");
}

/** Learning is told of the success (only in a run that failed before). */
function learnSuccess(state: CallState): MaybePromise<undefined> {
  const { learning, observeOnly } = state.run;
  if (learning === undefined || observeOnly) return undefined;
  return learning.succeeded(state, state.tool, (op, fn) =>
    storeOp(state, op, fn),
  ) as MaybePromise<undefined>;
}

/**
 * The key settled `succeeded`, with the value when the policy replays it. A store that fails here
 * leaves the call's outcome as it is: the write happened and its answer is here, so the model gets
 * it. The entry stays pending, so after its lease a repeat of this logical call is refused, never
 * re-run.
 */
function settleSuccess(state: CallState): MaybePromise<undefined> {
  if (state.key === undefined) return undefined;
  return ask(state, settleSucceeded, nothing, afterEffect);
}

function afterEffect(state: CallState, error: unknown): undefined {
  storeAfterEffect(state, error);
  return undefined;
}

function settleSucceeded(state: CallState): MaybePromise<void> {
  const kept = state.tool.idempotency.replay ? (state.sent as Sent).value : undefined;
  // A call that can still be given up on frees its write's entry last (`answerOut`).
  if (handsOverLater(state)) {
    const written = settleKey(state, ledgerMove(state, "answered"), kept);
    // Whether its entry's free may land while the call's signal can still abort (doubt.ts).
    noteSettleAnswer(state.run.core.store, written);
    return written;
  }
  return settle(state, ledgerMove(state, "answered"), kept);
}

/**
 * The answer handed over: the host's moment before it (`ToolCall.beforeAnswer`), then the write's
 * entry freed, or the answer kept for the next identical call when the call's signal aborted
 * (doubt.ts `handOver`). A store that fails here leaves the outcome as it is (as `settleSuccess`).
 */
function answerOut(state: CallState): MaybePromise<undefined> {
  if (state.call.beforeAnswer === undefined && !handsOverLater(state)) return undefined;
  return ask(state, handOverOf, nothing, afterEffect);
}

function handOverOf(state: CallState): Promise<void> {
  return handOver(state, (state.sent as Sent).value, handsOverLater(state));
}

const nothing = (): undefined => undefined;

/** The breaker is told of the success (a store that fails here loses a count, nothing more). */
function breakerSuccess(state: CallState): MaybePromise<undefined> {
  return updateBreaker(state, "success") as MaybePromise<undefined>;
}

/** The value goes back. */
function ok(state: CallState): CallOutcome<unknown> {
  noteSuccess(state);
  return handedOk(state);
}

/** The value goes back, its success counted already. */
function handedOk(state: CallState): CallOutcome<unknown> {
  const { value } = state.sent as Sent;
  state.sent = undefined;
  noteResult(state, value);
  emitCall(state, "ok");
  if (state.keptAnswer)
    return { kind: "ok", value, attempts: state.attempts, replayed: false, kept: true };
  return { kind: "ok", value, attempts: state.attempts, replayed: false };
}

/** What the attempt came to is a failure: the executor threw, or answered `isError: true`. */
function isErrorResult(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  try {
    return (value as { isError?: unknown }).isError === true;
  } catch {
    // A getter (or proxy) that throws: not a result anyone can trust, judged as a failure without
    // text (failure.ts reads it so), never the throw itself out of run.call.
    return true;
  }
}

/** What a cut attempt keeps: its reason, its signal's controller and abort listeners. */
interface Aborting {
  controller: AbortController | undefined;
  stopped: { reason: unknown } | undefined;
  listeners: ((reason: unknown) => void)[] | undefined;
}

/**
 * What an executor receives: the public `AttemptContext` and nothing more. The attempt's own
 * workings (its answer, its cut, the steps after it) stay on its `Attempt`, held in a private
 * field: an executor can neither read them nor answer or cut the attempt itself. Its signal is
 * made on first read: an executor that never reads it (a plain function, or an adapter told
 * through `onAbort`) costs no AbortController. The key, the arguments and `_meta` are the call's,
 * the same for each attempt.
 */
class Context implements AttemptContext {
  readonly #inner: Attempt;

  constructor(
    inner: Attempt,
    readonly attempt: number,
    readonly remainingMs: number,
  ) {
    this.#inner = inner;
  }

  get idempotencyKey(): string | undefined {
    return this.#inner.state.key;
  }

  get args(): Readonly<Record<string, unknown>> {
    return this.#inner.state.args;
  }

  get meta(): Readonly<Record<string, unknown>> {
    return this.#inner.state.meta;
  }

  get signal(): AbortSignal {
    return this.#inner.signal();
  }

  onAbort(listener: (reason: unknown) => void): void {
    this.#inner.onAbort(listener);
  }

  beforeSending<R>(wait: Promise<R>): Promise<R> {
    return this.#inner.beforeSending(wait);
  }
}

/**
 * The attempt in flight, as the flow, the run's guard and the call's own signal see it; its
 * executor sees only its `Context`.
 */
class Attempt implements Sent, Waiting, LiveAttempt, WatchedAttempt {
  #abort: Aborting | undefined = undefined;
  /** What the attempt came to, once it ended (`Sent`: read by the steps after it). */
  #thrown = false;
  #value: unknown = undefined;
  #deadlineHit = false;
  #cut = false;
  readonly state: CallState;
  /**
   * Settles the attempt's promise with what the steps after it come to; undefined once the
   * attempt ended (or before it was sent).
   */
  #end: ((answer: MaybePromise<StepAnswer>) => void) | undefined = undefined;
  #ended: Promise<StepAnswer> | undefined = undefined;
  /** The steps after `send`, from `resumeWith`. */
  #steps: readonly Step[] = NO_STEPS;
  #next = 0;
  /** Waits before sending in progress (`beforeSending`): cut now, the attempt left nothing. */
  #unsent = 0;

  constructor(state: CallState) {
    this.state = state;
  }

  get thrown(): boolean {
    return this.#thrown;
  }

  get value(): unknown {
    return this.#value;
  }

  get deadlineHit(): boolean {
    return this.#deadlineHit;
  }

  get wasCut(): boolean {
    return this.#cut;
  }

  get readOnly(): boolean {
    return this.state.effect === "read_only";
  }

  /** `AttemptContext.onAbort`. */
  onAbort(listener: (reason: unknown) => void): void {
    const a = this.#abort;
    if (a?.stopped) listener(a.stopped.reason);
    else if (this.#end === undefined) listener(endedError("The attempt has ended"));
    else if (a === undefined)
      this.#abort = { controller: undefined, stopped: undefined, listeners: [listener] };
    else if (a.listeners === undefined) a.listeners = [listener];
    else a.listeners.push(listener);
  }

  /**
   * `AttemptContext.beforeSending`. Once `wait` is done, the executor goes on to send only when
   * the attempt still may: not when it was cut meanwhile (a wait that did not heed the signal),
   * nor when the run ended meanwhile by a stop Governor decided. Such a stop lets an admitted
   * attempt finish what it sent; this one has sent nothing, so it is cut here, as not sent.
   */
  beforeSending<R>(wait: Promise<R>): Promise<R> {
    this.#unsent += 1;
    return Promise.resolve(wait).then(
      (value) => {
        this.#mayStillSend();
        return value;
      },
      (error: unknown) => {
        this.#unsent -= 1;
        throw error;
      },
    );
  }

  /**
   * After a wait before sending: throws the cut's reason when the attempt may not send. The
   * deadline is read here too: a wait that ends after it, before the guard's timer had its turn
   * (a busy event loop), must not send.
   */
  #mayStillSend(): void {
    const r = this.state.run;
    if (!r.observeOnly) {
      if (r.ended !== undefined) this.cut(endedError("The run has ended"), false);
      else if (r.core.now() >= r.deadline) this.cut(deadlineError(), true);
    }
    this.#unsent -= 1;
    const stopped = this.#abort?.stopped;
    if (stopped !== undefined) throw stopped.reason;
  }

  /** `AttemptContext.signal`. */
  signal(): AbortSignal {
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
  send(execute: Executor<unknown>): Waiting {
    const { state } = this;
    const { guard } = state.run;
    this.#ended = new Promise<StepAnswer>((resolve) => {
      this.#end = resolve;
    });
    // Only a call with its own signal cuts its attempt itself.
    if (state.call.signal !== undefined) state.live = this;
    guard.enter(this);
    let running: Promise<unknown>;
    try {
      running = Promise.resolve(execute(new Context(this, state.attempts, state.remainingMs)));
    } catch (thrown) {
      this.#finish(true, thrown, false, false);
      return this;
    }
    guard.watch(this, running);
    if (this.#end !== undefined) guard.started();
    return this;
  }

  /** The executor's promise settled (the guard's watch, in a reaction of its own). */
  answered(thrown: boolean, value: unknown): void {
    this.#finish(thrown, value, false, true);
  }

  resumeWith(steps: readonly Step[], next: number): Promise<StepAnswer> {
    this.#steps = steps;
    this.#next = next;
    return this.#ended as Promise<StepAnswer>;
  }

  /** Cuts the attempt: its signal aborts with `reason`, its abort listeners are called. */
  cut(reason: unknown, deadlineHit: boolean): void {
    if (this.#end === undefined) return;
    this.#cut = true;
    if (this.#unsent > 0) this.state.cutUnsent = true;
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
    this.#finish(true, reason, deadlineHit, false);
  }

  /**
   * The attempt ended, by its answer or its cut (whichever came first; the other is ignored): what
   * it came to is kept in `state.sent`, and the steps after `send` run. `inReaction`: called from
   * the executor's promise's reaction, so they run now; else (a cut, inside whatever cut it, or a
   * synchronous throw, inside `run.call`) a microtask later.
   */
  #finish(thrown: boolean, value: unknown, deadlineHit: boolean, inReaction: boolean): void {
    const end = this.#end;
    if (end === undefined) return;
    this.#end = undefined;
    // The attempt ended: its abort listeners are dropped, never called.
    if (this.#abort !== undefined) this.#abort.listeners = undefined;
    const state = this.state;
    state.run.guard.leave(this);
    if (state.live === this) state.live = undefined;
    this.#thrown = thrown;
    this.#value = value;
    this.#deadlineHit = deadlineHit;
    state.sent = this;
    if (inReaction) this.#land(end);
    else Attempt.#landSoon(this, end);
  }

  /**
   * The steps after `send`, run: their outcome (or its promise, or their throw) settles the
   * attempt's promise, which is the call's.
   */
  #land(end: (answer: MaybePromise<StepAnswer>) => void): void {
    try {
      end(runSteps(this.state, this.#steps, this.#next));
    } catch (error) {
      end(Promise.reject(error));
    }
  }

  /**
   * `#land` a microtask later (static, apart from `#finish`: a closure made there would make every
   * call of it allocate its scope).
   */
  static #landSoon(attempt: Attempt, end: (answer: MaybePromise<StepAnswer>) => void): void {
    queueMicrotask(() => attempt.#land(end));
  }
}
