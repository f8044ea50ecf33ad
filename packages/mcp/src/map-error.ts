import { STATUS_CODES } from "node:http";
import { type Failure, failureFromError, type LocalKind } from "@governor/core";
import {
  isV2OAuthError,
  isV2ProtocolError,
  isV2SdkError,
  isV2SseError,
  isV2Unauthorized,
  v2HttpStatus,
  v2LocalKind,
} from "./v2-errors.ts";

/**
 * What the adapter knows at the call site. The SDK's own `-32000` and `-32001` have exactly the
 * shape of errors a peer sends, so only this bookkeeping tells them apart. Every field is optional:
 * without it, {@link mapSdkError} falls back to the shape the SDK 1.32 gives its own errors.
 */
export interface CallSiteFacts {
  /**
   * Whether the client's connection closed during this attempt (its `onclose` fires before the
   * SDK rejects the pending calls with `-32000 Connection closed`).
   */
  readonly connectionClosed?: boolean;
  /** The timeout given to the SDK for this attempt, in ms: a `-32001` with this `data.timeout` is the SDK's. */
  readonly timeoutMs?: number;
  /** The adapter's own timer (or the run's deadline) ended the attempt. */
  readonly timedOut?: boolean;
  /** The adapter aborted the attempt because the run's signal aborted. */
  readonly aborted?: boolean;
  /** A `Retry-After` hint captured from the HTTP response (see `captureRetryAfter`), in ms. */
  readonly retryAfterMs?: number | undefined;
}

/** A check the adapter makes on the client side, before or after the wire (never from the peer). */
export class LocalCheckError extends Error {
  override readonly name = "LocalCheckError";
  /** What kind of local failure it is. */
  readonly local: LocalKind;

  constructor(local: LocalKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.local = local;
  }
}

/**
 * What the model may read for local failures it can be told about: the error's own message is a
 * transport detail (`fetch failed`, `AbortError: …`, a response body); the raw error stays in
 * `raw` for the host. Failures routed to the host keep their message.
 */
const LOCAL_TEXT: Partial<Record<LocalKind, string>> = {
  timeout: "Request timed out",
  aborted: "The call was aborted",
  connection_closed: "Connection closed before the answer arrived",
  connection_refused: "Connection refused",
  network: "Network error",
};

const SDK_TIMEOUT = -32001;
const SDK_CLOSED = -32000;

/**
 * Texts only the SDK's `Client.callTool` generates (its output-schema checks): 1.32's McpError
 * prefixes them, 2.x's ProtocolError does not. 2.x also refuses, before sending, a tool whose
 * output schema does not compile.
 */
const CLIENT_CHECKS: readonly RegExp[] = [
  /^(?:MCP error -3260[02]: )?Structured content does not match the tool's output schema/,
  /^(?:MCP error -32602: )?Failed to validate structured content/,
  /^(?:MCP error -32600: )?Tool \S+ has an output schema but did not return structured content$/,
  /^Tool '[^']*' has an invalid outputSchema: /,
];
const SDK_CLOSED_MESSAGE = "MCP error -32000: Connection closed";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function constructorName(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  const ctor: unknown = (value as { constructor?: unknown }).constructor;
  return typeof ctor === "function" ? ctor.name : undefined;
}

/** 1.32's `McpError` and its subclasses (which keep the name), without importing the SDK. */
function isMcpError(
  error: unknown,
): error is { code: number; message: string; data?: unknown; name: string } {
  return isRecord(error) && error.name === "McpError" && typeof error.code === "number";
}

/** `StreamableHTTPError` without importing the SDK's HTTP client: a numeric `code`, a fixed prefix. */
function httpErrorStatus(error: unknown): number | undefined {
  if (!isRecord(error) || typeof error.code !== "number") return undefined;
  return typeof error.message === "string" && error.message.startsWith("Streamable HTTP error")
    ? error.code
    : undefined;
}

/**
 * The legacy SSE transport's refused POST (1.32 and 2.x alike): a plain `Error` whose message
 * is the SDK's fixed prefix, the status, then the response body (or a redirect's text).
 */
const SSE_POST_REFUSED = /^Error POSTing to endpoint \(HTTP (\d{3})\): /;

/** The status of the SSE transport's refused POST, read from its message (the body follows it). */
function ssePostStatus(error: unknown): number | undefined {
  if (!isRecord(error) || error.name !== "Error" || typeof error.message !== "string") {
    return undefined;
  }
  const match = SSE_POST_REFUSED.exec(error.message);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * The status of the SSE transport's `SseError` (its event stream's `GET` failed while
 * connecting): its `code`, a redirect or error status. A `200` of the wrong content type, a `204`
 * or no answer at all (`undefined`: the fetch failed) is no status.
 */
function sseStreamStatus(error: unknown): number | undefined {
  if (!isRecord(error) || typeof error.code !== "number") return undefined;
  const sse =
    isV2SseError(error) ||
    constructorName(error) === "SseError" ||
    (typeof error.message === "string" && error.message.startsWith("SSE error: "));
  return sse && error.code >= 300 && error.code <= 599 ? error.code : undefined;
}

/** Whether an error means the session is gone and nothing was sent (`Not connected`, HTTP 404). */
export function isSessionGone(error: unknown): boolean {
  if (error instanceof Error && error.message === "Not connected") return true;
  if (isV2SdkError(error)) return error.code === "NOT_CONNECTED" || v2HttpStatus(error) === 404;
  return httpErrorStatus(error) === 404 || ssePostStatus(error) === 404;
}

/**
 * Maps whatever a client call rejected with to a `Failure`, tagging its origin (docs/architecture.md §2),
 * for both SDK generations.
 *
 * `@modelcontextprotocol/sdk` 1.32: `McpError`s are the peer's unless the call site knows better:
 * the SDK's own timeout (`-32001` with `data.timeout` / `data.maxTotalTimeout`), a caller's abort,
 * and a connection closed mid-call (`-32000`) are local. So are `Not connected`, a result failing
 * the result schema (`$ZodError`), the client's output-schema checks, `StreamableHTTPError`
 * (its `code` is the HTTP status; 404 means the session expired), `UnauthorizedError`,
 * `TypeError('fetch failed')` (by `cause.code`), `AbortError` and spawn errors.
 *
 * `@modelcontextprotocol/client` 2.x: a `ProtocolError` (and `UrlElicitationRequiredError`…) is
 * the peer's whatever its code, except the client's output-schema checks; an `SdkError` is local,
 * by its string `code` (`REQUEST_TIMEOUT` with `data.timeout` is the SDK's timer, without `data` a
 * caller's abort); an `SdkHttpError` by its `data.status`; `UnauthorizedError` is HTTP 401;
 * `OAuthError` goes to the host. A string `code` is kept in `Failure.code`.
 *
 * The legacy SSE transport (both generations) is read as Streamable HTTP is: its refused POST (a
 * plain `Error`, `Error POSTing to endpoint (HTTP <status>): <body>`) by the status in its
 * message, 404 meaning the session expired; its `SseError` (the event stream's `GET` failed while
 * connecting) by its `code`. The model reads `HTTP <status> <phrase>`, never the body.
 * @example
 * mapSdkError(new McpError(-32001, "Request timed out", { timeout: 500 }), { timeoutMs: 500 });
 * // → { channel: "local", origin: "local", local: "timeout", … }
 */
export function mapSdkError(error: unknown, facts: CallSiteFacts = {}): Failure {
  try {
    return mapReadable(error, facts);
  } catch {
    // A hostile or broken error object (a throwing getter) must not crash the agent loop: core
    // reads what it can and routes it to the host.
    return failureFromError(error, { origin: "local", local: "thrown" });
  }
}

function mapReadable(error: unknown, facts: CallSiteFacts): Failure {
  const local = (kind: LocalKind, extra: Partial<Failure> = {}): Failure =>
    withLocalText({ ...failureFromError(error, { origin: "local", local: kind }), ...extra });
  /** An HTTP status from the transport (`StreamableHTTPError`, `SdkHttpError`, the SSE transport's). */
  const statusFailure = (status: number): Failure => {
    if (status < 100 || status > 599) return local("network");
    // The SDK's message holds the response body: the host keeps it (raw); the model reads the status.
    const phrase = STATUS_CODES[status];
    return local("http_status", {
      text: `HTTP ${status}${phrase === undefined ? "" : ` ${phrase}`}`,
      httpStatus: status,
      ...(facts.retryAfterMs !== undefined && { retryAfterMs: facts.retryAfterMs }),
    });
  };
  if (facts.timedOut) return local("timeout");
  if (facts.aborted) return local("aborted");
  const name = isRecord(error) && typeof error.name === "string" ? error.name : "";

  if (isMcpError(error)) {
    const data = isRecord(error.data) ? error.data : undefined;
    if (error.code === SDK_TIMEOUT && data) {
      const own =
        facts.timeoutMs === undefined
          ? typeof data.timeout === "number"
          : data.timeout === facts.timeoutMs;
      // maxTotalTimeout expiry: the SDK's only -32001 without data.timeout.
      const total =
        typeof data.maxTotalTimeout === "number" && typeof data.totalElapsed === "number";
      if (own || total) return local("timeout");
    }
    if (error.code === SDK_CLOSED) {
      const closed =
        facts.connectionClosed ??
        (error.message === SDK_CLOSED_MESSAGE && error.data === undefined);
      if (closed) return local("connection_closed");
    }
    if (CLIENT_CHECKS.some((check) => check.test(error.message))) return local("malformed_result");
    return failureFromError(error, { origin: "peer" });
  }
  // 2.x: a ProtocolError is the peer's (whatever its code: 2.x's own timeouts and closes are
  // SdkErrors), except the client's output-schema checks.
  if (isV2ProtocolError(error)) {
    if (CLIENT_CHECKS.some((check) => check.test(error.message))) return local("malformed_result");
    return failureFromError(error, { origin: "peer", jsonRpc: true });
  }
  if (isV2SdkError(error)) {
    const httpStatus = v2HttpStatus(error);
    if (httpStatus !== undefined) return statusFailure(httpStatus);
    return { ...local(v2LocalKind(error)), code: error.code };
  }
  // Its text names the server's URL or quotes the OAuth error: the host keeps it (raw).
  if (isV2Unauthorized(error)) return statusFailure(401);
  if (isV2OAuthError(error)) return local("thrown");
  if (error instanceof LocalCheckError) return local(error.local);
  if (name.endsWith("ZodError")) return local("malformed_result");
  if (name === "AbortError") return local("aborted");
  if (name === "TimeoutError") return local("timeout");
  if (error instanceof Error && error.message === "Not connected") return local("not_connected");
  // SDK 1.32's UnauthorizedError keeps the name "Error": tell it by its class name.
  if (name === "UnauthorizedError" || constructorName(error) === "UnauthorizedError") {
    return statusFailure(401);
  }
  const status = httpErrorStatus(error) ?? ssePostStatus(error) ?? sseStreamStatus(error);
  if (status !== undefined) return statusFailure(status);
  // `fetch failed` with cause.code, Node socket errors, spawn failures: by the system code.
  const mapped = failureFromError(error, { origin: "local" });
  return withLocalText(
    mapped.channel === "local" ? mapped : { ...mapped, channel: "local", origin: "local" },
  );
}

function withLocalText(failure: Failure): Failure {
  const text = failure.local === undefined ? undefined : LOCAL_TEXT[failure.local];
  return text === undefined ? failure : { ...failure, text };
}
