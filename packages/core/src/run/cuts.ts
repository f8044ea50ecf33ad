// What cuts a call short (the run's signal, the host's end, the call's own signal, the run's end
// and its deadline), and host hooks waited for within those bounds.
import type { MaybePromise } from "../types.ts";
import type { CallState } from "./call-state.ts";
import { hostEndReason, hostEndSignal, runEndedSignal } from "./run-state.ts";
import { abortError, guardedAsync, MAX_TIMER_MS } from "./waits.ts";

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
