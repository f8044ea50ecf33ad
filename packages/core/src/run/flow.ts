// The one mechanism for "synchronous when the answer is already there" (docs/architecture.md §1).
// A call's steps are generator functions that `yield` each store answer, hook answer or attempt
// they wait for; `drive` hands a value straight back and waits only for a promise. With the memory
// store, a call that succeeds at once waits for one thing: its executor's answer.
import { isThenable } from "./store-guard.ts";

/**
 * A step of a call: it yields what it waits for (a value, or a promise of one) and gets back the
 * answer (a rejection is thrown at the `yield`), and returns its result.
 */
export type Flow<R> = Generator<unknown, R, unknown>;

/** Runs a flow to its end: always a promise (a throw anywhere becomes its rejection). */
export function drive<R>(flow: Flow<R>): Promise<R> {
  try {
    const done = run(flow, undefined, false);
    return isThenable(done) ? done : Promise.resolve(done);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Resumes `flow` with `input` (thrown into it when `failed`) and goes on while it yields values;
 * at the first promise it yields, returns a promise of its result.
 */
function run<R>(flow: Flow<R>, input: unknown, failed: boolean): R | Promise<R> {
  let answer = input;
  let thrown = failed;
  for (;;) {
    const step = thrown ? flow.throw(answer) : flow.next(answer);
    if (step.done === true) return step.value;
    if (isThenable(step.value)) return resumeWith(flow, step.value);
    answer = step.value;
    thrown = false;
  }
}

/** Waits for one pending answer, then resumes the flow with it (or with its rejection). */
function resumeWith<R>(flow: Flow<R>, pending: PromiseLike<unknown>): Promise<R> {
  return Promise.resolve(pending).then(
    (answer) => run(flow, answer, false),
    (error: unknown) => run(flow, error, true),
  );
}
