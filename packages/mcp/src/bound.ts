/** Node fires a longer timeout after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/** Why {@link within} gave up: its time ran out, or its signal aborted. */
export class BoundError extends Error {
  override readonly name = "BoundError";
  /** `timeout`: `ms` passed; `aborted`: the signal aborted. */
  readonly why: "timeout" | "aborted";

  constructor(why: "timeout" | "aborted", message: string) {
    super(message);
    this.why = why;
  }
}

/**
 * Settles as `promise` does, or rejects with a {@link BoundError} once `ms` have passed or
 * `signal` aborts (with the signal's reason when that is a BoundError), whichever comes first. Leaves no timer or listener behind; `promise` itself
 * goes on (the caller cancels it through a signal of its own, if it can).
 */
export function within<T>(promise: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> {
  const aborted = (): BoundError =>
    signal?.reason instanceof BoundError ? signal.reason : new BoundError("aborted", "aborted");
  if (signal?.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(aborted());
  }
  return new Promise<T>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      done();
      reject(aborted());
    };
    const timer = setTimeout(
      () => {
        done();
        reject(new BoundError("timeout", `did not finish within ${ms} ms`));
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}
