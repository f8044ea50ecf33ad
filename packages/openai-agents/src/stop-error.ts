import {
  type CallOutcome,
  GovernorError,
  type HostError,
  type Reason,
  type RunSummary,
} from "@governor/core";

type StopOutcome = Extract<CallOutcome<unknown>, { kind: "stop" }>;

/**
 * Thrown by a governed tool when Governor stops the run: the Agents SDK ends `run()` with it (as
 * the `error` of the `ToolCallError` it throws; {@link governorStopOf} finds it). It carries
 * Governor's reason, the run's summary and, for a write that may have happened, its idempotency
 * key. The model never reads it.
 */
export class GovernorStopError extends GovernorError {
  /** Why the run stopped (`uncertain_mutation`, `repeated_failure`, `budget_exhausted`, …). */
  readonly reason: Reason;
  /** The tool whose call stopped the run. */
  readonly tool: string;
  /** The tool's server (an MCP server's name), when there is one. */
  readonly server: string | undefined;
  /** Whether a person can resolve the cause (e.g. grant a permission, settle a key). */
  readonly personResolvable: boolean;
  /** The run's summary when it stopped. */
  readonly summary: RunSummary;
  /** The key of a write that may have happened (`uncertain_mutation`): settle it once checked. */
  readonly idempotencyKey: string | undefined;
  /** Set when the stop came from a failure routed to the host (a JSON-RPC error, …). */
  readonly hostError: HostError | undefined;
  /** Governor's stop text: what the model would have read (redacted). */
  readonly text: string;

  constructor(outcome: StopOutcome, tool: string, server: string | undefined) {
    super("run_ended", `${tool}: Governor stopped the run (${outcome.reason})`, {
      cause: outcome.hostError,
    });
    this.name = "GovernorStopError";
    this.reason = outcome.reason;
    this.tool = tool;
    this.server = server;
    this.personResolvable = outcome.personResolvable;
    this.summary = outcome.summary;
    this.idempotencyKey = outcome.idempotencyKey;
    this.hostError = outcome.hostError;
    this.text = outcome.result.content[0].text;
  }
}

/** How deep {@link governorStopOf} looks through `error` / `cause` links. */
const MAX_DEPTH = 8;

/**
 * Finds the {@link GovernorStopError} in what `run()` threw: the Agents SDK wraps a tool's error
 * in a `ToolCallError` (its `error` field) and may wrap that again (`cause`). Returns `undefined`
 * when the run did not end because Governor stopped it.
 * @example
 * try {
 *   await run(agent, input);
 * } catch (error) {
 *   const stop = governorStopOf(error);
 *   if (!stop) throw error;
 *   report(stop.reason, stop.idempotencyKey, stop.summary);
 * }
 */
export function governorStopOf(error: unknown): GovernorStopError | undefined {
  // By marker and name, not `instanceof`: another copy of this package may have thrown it.
  return findInChain(
    error,
    (e): e is GovernorStopError =>
      GovernorError.isInstance(e) && e.code === "run_ended" && e.name === "GovernorStopError",
  );
}

/**
 * Finds the first value in `error`'s chain (`error` field, then `cause`) that matches `test`;
 * bounded, and safe against cycles and throwing getters.
 */
export function findInChain<T>(
  error: unknown,
  test: (value: unknown) => value is T,
): T | undefined {
  const seen = new Set<unknown>();
  let current: unknown = error;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (current === null || typeof current !== "object" || seen.has(current)) return undefined;
    if (test(current)) return current;
    seen.add(current);
    try {
      const record = current as { error?: unknown; cause?: unknown };
      current = record.error instanceof Error ? record.error : record.cause;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
