import {
  GovernorError,
  type HostError,
  type Reason,
  type Run,
  type RunSummary,
} from "@governor/core";

/** What a governed tool saw when its call stopped the run. */
export interface StopRecord {
  readonly tool: string;
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
 * Thrown out of the graph (`invoke`, `stream`) when the next model turn would start on a run
 * Governor has ended: the model does not get another turn. Carries why the run ended, the run's
 * summary and, for a write whose outcome is uncertain, the call's idempotency key (settle it with
 * `governor.settle(key, …)` once a person has checked). Its `code` is `run_ended`.
 */
export class GovernorStopError extends GovernorError {
  /** Why the run ended (`forbidden`, `uncertain_mutation`, `protocol_error`, …). */
  readonly reason: string;
  /** The run's summary when the graph was stopped. */
  readonly summary: RunSummary;
  /** The tool whose call stopped the run, when a governed tool did. */
  readonly tool: string | undefined;
  /** Whether a person can resolve the cause (grant access, confirm, check a write). */
  readonly personResolvable: boolean;
  /** The key of a write whose outcome is uncertain (`uncertain_mutation`). */
  readonly idempotencyKey: string | undefined;
  /** The failure only the host can handle, when that is what stopped the run. */
  readonly hostError: HostError | undefined;
  /** What the model was shown as the stopping call's result (redacted). */
  readonly modelText: string | undefined;

  constructor(summary: RunSummary, stop: StopRecord | undefined) {
    const reason = stop?.reason ?? summary.reason;
    const where = stop ? ` at ${stop.tool}` : "";
    const key = stop?.idempotencyKey
      ? `; the write's idempotency key is ${stop.idempotencyKey}`
      : "";
    super("run_ended", `Governor ended the run (${reason})${where}${key}`, {
      cause: stop?.hostError,
    });
    this.name = "GovernorStopError";
    this.reason = reason;
    this.summary = summary;
    this.tool = stop?.tool;
    this.personResolvable = stop?.personResolvable ?? false;
    this.idempotencyKey = stop?.idempotencyKey;
    this.hostError = stop?.hostError;
    this.modelText = stop?.text;
  }
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
  if (run.ended) throw new GovernorStopError(run.summary(), stops.get(run));
}
