import { GovernorStopError, type HostError, type Reason, type Run } from "@governor/core";

/**
 * Thrown out of the graph (`invoke`, `stream`) when the next model turn would start on a run
 * Governor has ended: the model does not get another turn. The class is `@governor/core`'s, the
 * same for every adapter.
 */
export { GovernorStopError };

/** What a governed tool saw when its call stopped the run. */
export interface StopRecord {
  readonly tool: string;
  readonly server?: string | undefined;
  readonly reason: Reason;
  readonly personResolvable: boolean;
  /** The text the model was given as the tool's result. */
  readonly text: string;
  readonly idempotencyKey?: string | undefined;
  readonly hostError?: HostError | undefined;
}

// The first stop of each run, recorded by its governed tools for `GovernorStopError`.
const stops = new WeakMap<Run, StopRecord>();

/** Records the stop of a run; the first one wins (later calls only see the ended run). */
export function recordStop(run: Run, stop: StopRecord): void {
  if (!stops.has(run)) stops.set(run, stop);
}

/**
 * Throws a {@link GovernorStopError} when the run has ended (a Governor stop, or the host's
 * `run.end()`). Call it where the next model turn starts, e.g. first thing in your model node:
 * the tool messages of the stopping turn are already in the graph's state (every tool call has
 * its answer), and the model is not called again.
 * @example
 * const callModel = async (state) => {
 *   throwIfStopped(run);
 *   return { messages: [await model.invoke(state.messages)] };
 * };
 */
export function throwIfStopped(run: Run): void {
  if (!run.ended) return;
  const summary = run.summary();
  const stop = stops.get(run);
  throw new GovernorStopError({
    reason: stop?.reason ?? summary.reason,
    summary,
    tool: stop?.tool,
    server: stop?.server,
    personResolvable: stop?.personResolvable,
    idempotencyKey: stop?.idempotencyKey,
    hostError: stop?.hostError,
    modelText: stop?.text,
  });
}
