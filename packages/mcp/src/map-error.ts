import { type Failure, failureFromError, type LocalKind } from "@governor/core";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

/** What the adapter knows at the call site, to tell local errors from the peer's. */
export interface CallSiteFacts {
  /** The client's connection closed during or before the call (its `onclose` fired). */
  readonly connectionClosed: boolean;
  /** The timeout the adapter gave the SDK for this attempt, in ms. */
  readonly timeoutMs: number;
  /** A Retry-After hint captured from the HTTP response, in ms. */
  readonly retryAfterMs: number | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** A successful result whose structured content fails the tool's output schema (checked locally). */
export class OutputSchemaError extends Error {
  override readonly name = "OutputSchemaError";
}

const SDK_TIMEOUT = -32001;
const SDK_CLOSED = -32000;

/**
 * Maps whatever the SDK rejected with to a `Failure`, tagging the origin: the SDK's own `-32000`
 * and `-32001` have exactly the shape of errors from the wire, so only the call site can tell.
 */
export function mapSdkError(error: unknown, facts: CallSiteFacts): Failure {
  const name = isRecord(error) && typeof error.name === "string" ? error.name : "";
  const local = (kind: LocalKind, extra: Partial<Failure> = {}): Failure => ({
    ...failureFromError(error, { origin: "local", local: kind }),
    ...extra,
  });

  if (error instanceof McpError || (name === "McpError" && isRecord(error) && typeof error.code === "number")) {
    const e = error as McpError;
    const data = isRecord(e.data) ? e.data : undefined;
    // The SDK's own timeout carries data.timeout (or data.maxTotalTimeout); a peer's -32001 does not.
    if (e.code === SDK_TIMEOUT && data && (typeof data.timeout === "number" || typeof data.maxTotalTimeout === "number")) {
      return local("timeout");
    }
    if (e.code === SDK_CLOSED && (facts.connectionClosed || /^MCP error -32000: Connection closed$/.test(e.message))) {
      return local("connection_closed");
    }
    return failureFromError(error, { origin: "peer" });
  }
  if (/ZodError$/.test(name) || error instanceof OutputSchemaError) return local("malformed_result");
  if (name === "AbortError") return local("aborted");
  if (error instanceof Error && error.message === "Not connected") return local("not_connected");
  if (name === "UnauthorizedError") return local("http_status", { httpStatus: 401 });
  // StreamableHTTPError: `code` is the HTTP status (404 means the session expired).
  if (isRecord(error) && typeof error.code === "number" && /^Streamable HTTP error/.test(String(error.message))) {
    const status = error.code;
    if (status >= 100 && status <= 599) {
      return local("http_status", {
        httpStatus: status,
        ...(facts.retryAfterMs !== undefined && { retryAfterMs: facts.retryAfterMs }),
      });
    }
    return local("network");
  }
  // fetch failed with cause.code, Node socket errors, spawn failures.
  const mapped = failureFromError(error, { origin: "local" });
  return mapped.local === "thrown" ? { ...mapped, channel: "local", origin: "local" } : mapped;
}
