// The one mechanism for "synchronous when the answer is already there" (docs/architecture.md §1).
// A call is a list of named steps (call.ts); each ends the call with its outcome or lets the next
// one run. `runSteps` runs them in order, at once while each answers with a value, and waits only
// when one answers with a promise (a remote store, a hook): no generator, no closure and no
// promise is made for a step that does not wait. A step that needs a store's answer before it can
// go on hands it to `ask`, under the same rule. The one continuation kept is `Waiting`: the attempt
// in flight runs the steps after it itself, in the reaction that brings its executor's answer, so
// a successful call with the memory store waits on one promise of its own. The rare failure path
// is plain `async` code (failed-attempt.ts).
import type { MaybePromise } from "../types.ts";
import type { CallState } from "./call-state.ts";
import { dropClock } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import type { CallOutcome } from "./types.ts";

/** What a step comes to: the call's outcome (the call ends), or undefined (the next step runs). */
export type StepAnswer = CallOutcome<unknown> | undefined;

/**
 * A step of a call: a function of the call's state, answering at once, with a promise, or with a
 * `Waiting` that runs the steps after it itself.
 */
export type Step = (state: CallState) => MaybePromise<StepAnswer> | Waiting;

/**
 * A wait that takes over the steps after it: once its answer is there, it runs them in the promise
 * reaction that brought the answer, and its promise is what they come to. The attempt in flight
 * (attempts.ts `Attempt`) is the one: a successful call then waits on one promise of its own, not
 * on a promise and a second one for the steps after it. This is the flow's one kept continuation.
 */
export interface Waiting {
  /** Runs `steps` from `next` once the wait is over; the promise of what they come to. */
  resumeWith(steps: readonly Step[], next: number): Promise<StepAnswer>;
}

/** Whether a step's answer is a `Waiting` (an outcome, undefined or a promise has no `resumeWith`). */
function isWaiting(answer: MaybePromise<StepAnswer> | Waiting): answer is Waiting {
  return typeof (answer as Partial<Waiting> | undefined)?.resumeWith === "function";
}

/**
 * Runs `steps` from `from` in order until one answers with an outcome (or none is left: then
 * undefined). A step's throw or rejection is the result's. When a step waits, the clock reading
 * the call kept (run-state.ts `keepClock`) is dropped: other calls run before it resumes.
 */
export function runSteps(
  state: CallState,
  steps: readonly Step[],
  from = 0,
): MaybePromise<StepAnswer> {
  for (let i = from; i < steps.length; i++) {
    const answer = (steps[i] as Step)(state);
    if (answer === undefined) continue;
    if (isWaiting(answer)) {
      dropClock(state.run);
      return answer.resumeWith(steps, i + 1);
    }
    if (isThenable(answer)) return resume(state, steps, i + 1, answer);
    return answer;
  }
  return undefined;
}

/** A step waits: the steps after it run once its answer is there (unless it is an outcome). */
function resume(
  state: CallState,
  steps: readonly Step[],
  next: number,
  waited: Promise<StepAnswer>,
): Promise<StepAnswer> {
  dropClock(state.run);
  return waited.then((answer) => answer ?? runSteps(state, steps, next));
}

/**
 * What a step asked for, used: `use(state, answer)` at once when `asked` answers with a value,
 * after its promise when it answers with one; a throw or rejection of `asked` goes to `failed`
 * when there is one (a throw of `use` does not). `use` and `failed` are module functions, not
 * closures: a step that does not wait allocates nothing here.
 */
export function ask<A, R>(
  state: CallState,
  asked: (state: CallState) => MaybePromise<A>,
  use: (state: CallState, answer: A) => MaybePromise<R>,
  failed?: (state: CallState, error: unknown) => MaybePromise<R>,
): MaybePromise<R> {
  let answer: MaybePromise<A>;
  try {
    answer = asked(state);
  } catch (error) {
    if (failed === undefined) throw error;
    return failed(state, error);
  }
  if (!isThenable(answer)) return use(state, answer);
  return useLater(state, answer, use, failed);
}

/** `ask` for a pending answer (apart: closures made in `ask` would allocate its scope each time). */
function useLater<A, R>(
  state: CallState,
  answer: Promise<A>,
  use: (state: CallState, answer: A) => MaybePromise<R>,
  failed: ((state: CallState, error: unknown) => MaybePromise<R>) | undefined,
): Promise<R> {
  return answer.then(
    (value) => use(state, value),
    failed && ((error: unknown) => failed(state, error)),
  );
}
