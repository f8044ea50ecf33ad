import { type CallOutcome, GovernorError, HostError, type ModelResult } from "@governor/core";
import { GovernorStopError } from "./stop-error.ts";

/** What a governed call hands back to the Agents SDK: the tool's value, or Governor's text. */
export type Settled<T> =
  | { readonly kind: "ok"; readonly value: T }
  | { readonly kind: "model"; readonly result: ModelResult };

/**
 * Turns an outcome into what the SDK gets: `ok` and `model` are returned; a `stop` is thrown as a
 * {@link GovernorStopError}, which ends `run()` (the SDK rethrows a tool's error when the tool
 * has no error function).
 */
export function settle<T>(
  outcome: CallOutcome<T>,
  tool: string,
  server: string | undefined,
): Settled<T> {
  if (outcome.kind === "ok") return { kind: "ok", value: outcome.value };
  if (outcome.kind === "model") return { kind: "model", result: outcome.result };
  throw new GovernorStopError(outcome, tool, server);
}

/**
 * What the host receives when `run.call` rejects: a HostError as it is (a failure only the host
 * can handle, with no `onHostError` hook on the governor); anything else (a store that failed, a
 * bug) wrapped in one whose message is fixed, with the raw error as its `cause`, so a host that
 * logs `message` does not spread a connection string.
 */
export function toHostError(err: unknown, tool: string, server: string | undefined): HostError {
  if (GovernorError.isInstance(err) && err.code === "host_error") return err as HostError;
  const code = GovernorError.isInstance(err) ? err.code : "unexpected_error";
  return new HostError({
    tool,
    server,
    reason: code,
    channel: "local",
    message: `${tool}: Governor could not complete the call (${code}); the error is the cause`,
    cause: err,
  });
}
