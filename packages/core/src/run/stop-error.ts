import { GovernorError, type HostError } from "../errors.ts";
import type { RunEndReason, RunSummary } from "../telemetry/events.ts";

/** What {@link GovernorStopError} carries: why a run stopped, where, and what is left to check. */
export interface StopDetails {
  /**
   * Why the run stopped (`forbidden`, `uncertain_mutation`, `protocol_error`, …); `completed`
   * when the host ended it with `run.end()`.
   */
  readonly reason: RunEndReason;
  /** The run's summary when it stopped. */
  readonly summary: RunSummary;
  /** The tool whose call stopped the run, when a governed call did. */
  readonly tool?: string | undefined;
  /** The tool's server (an MCP server's name), when there is one. */
  readonly server?: string | undefined;
  /** Whether a person can resolve the cause (grant access, confirm, check a write). */
  readonly personResolvable?: boolean | undefined;
  /**
   * The key of a write that may have happened (`uncertain_mutation`, or a stop after an attempt
   * whose outcome was unknown): settle it once checked.
   */
  readonly idempotencyKey?: string | undefined;
  /** The failure only the host can handle, when that is what stopped the run. */
  readonly hostError?: HostError | undefined;
  /** What the model was shown as the stopping call's result (redacted). */
  readonly modelText?: string | undefined;
}

/**
 * Thrown by an adapter (LangChain.js, the OpenAI Agents SDK) to end the agent loop when Governor
 * has stopped the run: the model gets no further turn. It carries Governor's reason, the run's
 * summary and, for a write that may have happened, the call's idempotency key (settle it with
 * `governor.settle(key, …)` once a person has checked). Its `code` is `run_ended`; the same class
 * for every adapter, so one `catch` serves them all.
 * @example
 * catch (error) {
 *   if (!GovernorStopError.isStop(error)) throw error;
 *   report(error.reason, error.idempotencyKey, error.summary);
 * }
 */
export class GovernorStopError extends GovernorError {
  /**
   * Why the run stopped (`forbidden`, `uncertain_mutation`, `protocol_error`, …); `completed`
   * when the host ended it with `run.end()`.
   */
  readonly reason: RunEndReason;
  /** The run's summary when it stopped. */
  readonly summary: RunSummary;
  /** The tool whose call stopped the run, when a governed call did. */
  readonly tool: string | undefined;
  /** The tool's server (an MCP server's name), when there is one. */
  readonly server: string | undefined;
  /** Whether a person can resolve the cause (grant access, confirm, check a write). */
  readonly personResolvable: boolean;
  /**
   * The key of a write that may have happened (`uncertain_mutation`, or a stop after an attempt
   * whose outcome was unknown).
   */
  readonly idempotencyKey: string | undefined;
  /** The failure only the host can handle, when that is what stopped the run. */
  readonly hostError: HostError | undefined;
  /** What the model was shown as the stopping call's result (redacted). */
  readonly modelText: string | undefined;

  constructor(details: StopDetails) {
    const where = details.tool === undefined ? "" : ` at ${details.tool}`;
    const key =
      details.idempotencyKey === undefined
        ? ""
        : `; the write's idempotency key is ${details.idempotencyKey}`;
    super("run_ended", `Governor stopped the run (${details.reason})${where}${key}`, {
      cause: details.hostError,
    });
    this.name = "GovernorStopError";
    this.reason = details.reason;
    this.summary = details.summary;
    this.tool = details.tool;
    this.server = details.server;
    this.personResolvable = details.personResolvable ?? false;
    this.idempotencyKey = details.idempotencyKey;
    this.hostError = details.hostError;
    this.modelText = details.modelText;
  }

  /** True for a GovernorStopError, even one from another copy of the package. */
  static isStop(value: unknown): value is GovernorStopError {
    return (
      GovernorError.isInstance(value) &&
      value.code === "run_ended" &&
      value.name === "GovernorStopError"
    );
  }
}
