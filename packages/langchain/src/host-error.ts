import { GovernorError, HostError, REASONS, type Reason } from "@governor/core";
import { composeMessage } from "@governor/core/judge";

/**
 * What the host receives when `run.call` rejects: a HostError as it is; anything else (a store
 * that failed, a bug) wrapped in one whose message is fixed (the raw error is its `cause`), so a
 * host that logs or shows `message` does not spread a connection string either.
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

/** The reason a host failure stops the run with (`protocol_error` for codes that are not reasons). */
export function hostReason(error: HostError): Reason {
  return Object.hasOwn(REASONS, error.reason) ? (error.reason as Reason) : "protocol_error";
}

/** The model's text for a failure routed to the host: no part of the raw error. */
export function hostText(error: HostError): string {
  const reason = hostReason(error);
  return composeMessage({
    tool: error.tool,
    observation: "the call could not be completed",
    decision: {
      action: "stop",
      reason,
      certainty: "unknown",
      cause: reason,
      personResolvable: false,
    },
  });
}
