import { GovernorError } from "../errors.ts";
import type { MaybePromise } from "../types.ts";
import { MAX_TIMER_MS } from "./waits.ts";

/** Whether a store answered with a promise (a remote store) rather than a value (memory). */
export function isThenable<T>(value: MaybePromise<T>): value is Promise<T> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * Runs `run`, then `next` with its answer: synchronously when it answered with a value, after the
 * promise when it answered with one. A throw or a rejection of `run` goes to `fail` (a throw of
 * `next` does not).
 */
export function step<A, R>(
  run: () => MaybePromise<A>,
  next: (answer: A) => MaybePromise<R>,
  fail: (error: unknown) => MaybePromise<R>,
): MaybePromise<R> {
  let answer: MaybePromise<A>;
  try {
    answer = run();
  } catch (error) {
    return fail(error);
  }
  return isThenable(answer) ? answer.then(next, fail) : next(answer);
}

/** What bounds one store operation. */
export interface StoreBound {
  /** Any of them aborting cuts the operation (the run's signal, its end, the call's signal). */
  readonly signals: readonly (AbortSignal | undefined)[];
  /** Longest wait for an answer, in ms. */
  readonly timeoutMs: number;
}

/**
 * Runs one store operation, bounded: a synchronous answer (the memory store) passes through at no
 * cost (`fn` is called with `arg`, and `bounds` may be a function of it, called only for a pending
 * answer: a caller needs no closure per operation); a pending one is cut when a
 * signal aborts or `timeoutMs` pass. Every failure, a throw, a rejection or a cut, becomes a
 * `GovernorError` with code `store_error` whose message names only the operation (the store's own
 * error, which may hold a URL or an address, stays in `cause`).
 */
export function guardStore<T, A = undefined>(
  op: string,
  fn: (arg: A) => MaybePromise<T>,
  bounds: StoreBound | ((arg: A) => StoreBound),
  arg?: A,
): MaybePromise<T> {
  let answer: MaybePromise<T>;
  try {
    answer = fn(arg as A);
  } catch (cause) {
    throw storeError(op, cause);
  }
  if (!isThenable(answer)) return answer;
  const pending = answer;
  // Made only now: a synchronous answer needs no bound at all.
  const bound = typeof bounds === "function" ? bounds(arg as A) : bounds;
  const live = bound.signals.filter((s): s is AbortSignal => s !== undefined);
  return new Promise<T>((resolve, reject) => {
    const aborted = live.find((s) => s.aborted);
    if (aborted) {
      // The operation may still complete; its answer is not waited for.
      Promise.resolve(pending).then(undefined, () => {});
      reject(storeError(op, aborted.reason, "the run ended or was aborted"));
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const cleanup = () => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener("abort", onAbort);
    };
    const onAbort = (event: Event) => {
      cleanup();
      reject(storeError(op, (event.target as AbortSignal).reason, "the run ended or was aborted"));
    };
    const ms = Math.max(0, Math.min(bound.timeoutMs, MAX_TIMER_MS));
    timer = setTimeout(() => {
      cleanup();
      reject(storeError(op, undefined, `no answer within ${ms} ms`));
    }, ms);
    for (const s of live) s.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(pending).then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (cause: unknown) => {
        cleanup();
        reject(storeError(op, cause));
      },
    );
  });
}

/** Whether an error is the store's (a `GovernorError` with code `store_error`, `StoreError` included). */
export function isStoreError(error: unknown): error is GovernorError {
  return GovernorError.isInstance(error) && error.code === "store_error";
}

function storeError(op: string, cause: unknown, why?: string): GovernorError {
  if (isStoreError(cause)) return cause;
  return new GovernorError(
    "store_error",
    `The store failed during ${op}${why === undefined ? "" : `: ${why}`}`,
    { cause },
  );
}
