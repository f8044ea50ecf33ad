// Waiting without leaking: sleeps that wake on an abort, host hooks that cannot break the loop.
import type { MaybePromise } from "../types.ts";

/** Node fires a longer timeout after 1 ms; a deadline further away needs no timer. */
export const MAX_TIMER_MS = 2_147_483_647;

export function endedError(message: string): Error {
  return Object.assign(new Error(message), { name: "AbortError" });
}

/** What an attempt is cut with when the run's deadline passed (a `TimeoutError`). */
export function deadlineError(): Error {
  return Object.assign(new Error("The run's deadline passed"), { name: "TimeoutError" });
}

export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error
    ? reason
    : Object.assign(new Error("aborted"), { name: "AbortError" });
}

/**
 * Sleeps `ms`, or rejects at once when one of the signals aborts; leaves no timer or listener
 * behind. (Not `AbortSignal.any`: on Node 20 it leaks.)
 */
export function sleep(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  return new Promise((resolve, reject) => {
    const aborted = live.find((s) => s.aborted);
    if (aborted) return reject(abortError(aborted));
    const cleanup = () => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener("abort", onAbort);
    };
    const onAbort = (event: Event) => {
      cleanup();
      reject(abortError(event.target as AbortSignal));
    };
    const timer = setTimeout(() => {
      cleanup();
      resolve();
    }, ms);
    for (const s of live) s.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs a host hook; a hook that throws must not break the agent loop, so its error is dropped.
 * So is the rejection of a promise it returns (an `async` hook): unhandled, it would end the
 * process.
 */
export function guarded<R>(fn: () => R): R | undefined {
  try {
    return dropRejection(fn());
  } catch {
    return undefined;
  }
}

const ignore = (): void => {};

/** Marks a promise a hook returned as handled (its rejection dropped); returns `value` as is. */
export function dropRejection<R>(value: R): R {
  if (typeof value === "object" && value !== null) {
    const then = (value as { then?: unknown }).then;
    if (typeof then === "function") {
      try {
        then.call(value, undefined, ignore);
      } catch {
        // A thenable whose then throws has nothing to handle.
      }
    }
  }
  return value;
}

export async function guardedAsync<R>(fn: () => MaybePromise<R>): Promise<R | undefined> {
  try {
    return await fn();
  } catch {
    return undefined;
  }
}
