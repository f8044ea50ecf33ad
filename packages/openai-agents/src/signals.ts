/**
 * The Agents SDK aborts the signals of every other tool call of a turn when one of them fails
 * ("sibling cancellation"), and throws that failure once they all settled. A Governor stop is
 * such a failure: cutting a write of another call then would only make its outcome uncertain,
 * so a governed call ignores that abort (the SDK still waits for it) and honors every other one
 * (the host aborting `run()`, a timeout).
 */
export function isSiblingCancellation(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return (
    reason instanceof Error &&
    (reason.constructor.name === "SiblingCancellationError" ||
      reason.message === "Cancelled because a sibling task failed.")
  );
}

/**
 * A signal that aborts when `sdk` aborts for any reason but sibling cancellation; `unlink`
 * removes the listener it added. `undefined` when there is no SDK signal.
 */
export function withoutSiblingCancellation(sdk: AbortSignal | undefined): {
  signal: AbortSignal | undefined;
  unlink: () => void;
} {
  if (sdk === undefined) return { signal: undefined, unlink: () => {} };
  const ac = new AbortController();
  if (sdk.aborted) {
    if (!isSiblingCancellation(sdk)) ac.abort(sdk.reason);
    return { signal: ac.signal, unlink: () => {} };
  }
  const onAbort = () => {
    if (!isSiblingCancellation(sdk)) ac.abort(sdk.reason);
  };
  sdk.addEventListener("abort", onAbort, { once: true });
  return { signal: ac.signal, unlink: () => sdk.removeEventListener("abort", onAbort) };
}

/**
 * One signal that aborts when either does; `unlink` removes the listeners it added, so a long
 * run's signal does not collect one listener per tool call.
 */
export function linkSignals(
  a: AbortSignal,
  b: AbortSignal | undefined,
): { signal: AbortSignal; unlink: () => void } {
  if (b === undefined || a.aborted) return { signal: a, unlink: () => {} };
  if (b.aborted) return { signal: b, unlink: () => {} };
  const ac = new AbortController();
  const fromA = () => ac.abort(a.reason);
  const fromB = () => ac.abort(b.reason);
  a.addEventListener("abort", fromA, { once: true });
  b.addEventListener("abort", fromB, { once: true });
  return {
    signal: ac.signal,
    unlink: () => {
      a.removeEventListener("abort", fromA);
      b.removeEventListener("abort", fromB);
    },
  };
}
