import { createGovernor, type Failure } from "@governor/core";
import { classify } from "@governor/core/judge";
import { connectInMemory, createFaultServer, createLowLevelServer } from "@governor/testkit";
import {
  OAuthError,
  OAuthErrorCode,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  SseError as V2SseError,
  UnauthorizedError as V2UnauthorizedError,
  UrlElicitationRequiredError as V2UrlElicitationRequiredError,
} from "@modelcontextprotocol/client";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, UrlElicitationRequiredError } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { rejection } from "../../../test/support/rejection.ts";
import { type CallSiteFacts, isSessionGone, LocalCheckError, mapSdkError } from "./map-error.ts";

const policy = createGovernor({}, { metrics: false }).toolPolicy("a_tool");

/** Failure fields that matter, plus what the classifier makes of it. */
function judged(error: unknown, facts?: CallSiteFacts) {
  const failure = mapSdkError(error, facts);
  const c = classify(failure, policy);
  return {
    channel: failure.channel,
    origin: failure.origin,
    local: failure.local,
    action: c.action,
    reason: c.reason,
    certainty: c.certainty,
    failure,
  };
}

function fetchFailed(code: string): TypeError {
  const cause = Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code });
  return new TypeError("fetch failed", { cause });
}

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe("mapSdkError: the SDK 1.32 error shapes pinned in test/sdk-quirks.test.ts", () => {
  it("the SDK's own -32001 with data.timeout → local timeout (retry_dependency, unknown)", () => {
    const own = new McpError(-32001, "Request timed out", { timeout: 500 });
    expect(judged(own)).toMatchObject({
      channel: "local",
      origin: "local",
      local: "timeout",
      action: "retry_dependency",
      reason: "timeout",
      certainty: "unknown",
    });
    // With the call site's bookkeeping: only the timeout the adapter gave counts as its own.
    expect(judged(own, { timeoutMs: 500 }).local).toBe("timeout");
    expect(judged(own, { timeoutMs: 1500 })).toMatchObject({
      channel: "protocol",
      origin: "peer",
      action: "host",
    });
  });

  it("maxTotalTimeout expiry (-32001 without data.timeout) → local timeout", () => {
    const total = new McpError(-32001, "Maximum total timeout exceeded", {
      maxTotalTimeout: 120,
      totalElapsed: 130,
    });
    expect(judged(total, { timeoutMs: 500 })).toMatchObject({
      local: "timeout",
      action: "retry_dependency",
    });
  });

  it("a peer's -32001 without data → protocol, routed to the host", () => {
    expect(judged(new McpError(-32001, "Request timed out"))).toMatchObject({
      channel: "protocol",
      origin: "peer",
      action: "host",
      reason: "protocol_error",
    });
  });

  it("the adapter's own timer or the run's abort: local timeout / aborted whatever the shape", () => {
    const shaped = new McpError(-32001, "AbortError: This operation was aborted");
    expect(judged(shaped, { timedOut: true })).toMatchObject({
      local: "timeout",
      action: "retry_dependency",
    });
    expect(judged(shaped, { aborted: true })).toMatchObject({
      local: "aborted",
      action: "stop",
      reason: "aborted",
    });
    expect(judged(shaped, { aborted: true }).failure.text).toBe("The call was aborted");
  });

  it("-32000 Connection closed → local connection_closed when the connection closed during the call", () => {
    const closed = new McpError(-32000, "Connection closed");
    expect(judged(closed, { connectionClosed: true })).toMatchObject({
      channel: "local",
      local: "connection_closed",
      action: "retry_dependency",
      certainty: "unknown",
    });
    // Without bookkeeping, the SDK's exact shape; with it, a peer's -32000 stays the peer's.
    expect(judged(closed).local).toBe("connection_closed");
    expect(judged(closed, { connectionClosed: false })).toMatchObject({
      channel: "protocol",
      action: "host",
    });
    expect(judged(new McpError(-32000, "Server overloaded"))).toMatchObject({
      channel: "protocol",
    });
  });

  it("AbortError DOMException (an already-aborted signal) → local aborted", () => {
    const error = new DOMException("This operation was aborted", "AbortError");
    expect(judged(error)).toMatchObject({
      channel: "local",
      local: "aborted",
      action: "stop",
      reason: "aborted",
    });
  });

  it("Error('Not connected') → local not_connected → host session_expired, nothing sent", () => {
    expect(judged(new Error("Not connected"))).toMatchObject({
      channel: "local",
      local: "not_connected",
      action: "host",
      reason: "session_expired",
      certainty: "not_sent",
    });
  });

  it("zod's $ZodError (a result failing CallToolResultSchema) → local malformed_result → host", () => {
    const parsed = z
      .object({ content: z.array(z.unknown()) })
      .safeParse({ content: "not an array" });
    const error = parsed.error;
    expect(error?.name).toBe("ZodError");
    const core = new z.core.$ZodError(error?.issues ?? []);
    for (const e of [error, core]) {
      expect(judged(e)).toMatchObject({
        channel: "local",
        local: "malformed_result",
        action: "host",
        reason: "malformed_response",
      });
    }
  });

  it("StreamableHTTPError 404 → host session_expired; 429/503 → retry, with the captured Retry-After", () => {
    const expired = new StreamableHTTPError(404, "Error POSTing to endpoint: Session not found");
    expect(judged(expired)).toMatchObject({
      local: "http_status",
      action: "host",
      reason: "session_expired",
    });
    const limited = new StreamableHTTPError(
      429,
      "Error POSTing to endpoint: 429 Too Many Requests",
    );
    const j = judged(limited, { retryAfterMs: 2000 });
    expect(j).toMatchObject({
      local: "http_status",
      action: "retry_dependency",
      reason: "rate_limited",
      certainty: "failed",
    });
    expect(j.failure).toMatchObject({
      httpStatus: 429,
      retryAfterMs: 2000,
      text: "HTTP 429 Too Many Requests",
    });
    expect(classify(j.failure, policy).retryAfterMs).toBe(2000);
    expect(judged(new StreamableHTTPError(503, "x"))).toMatchObject({
      reason: "unavailable",
      action: "retry_dependency",
    });
    expect(judged(new StreamableHTTPError(-1, "Unexpected content type: text/html"))).toMatchObject(
      {
        local: "network",
      },
    );
    expect(isSessionGone(expired)).toBe(true);
    expect(isSessionGone(limited)).toBe(false);
    expect(isSessionGone(new Error("Not connected"))).toBe(true);
  });

  it("UnauthorizedError → local HTTP 401 → stop unauthorized", () => {
    expect(judged(new UnauthorizedError("token expired"))).toMatchObject({
      local: "http_status",
      action: "stop",
      reason: "unauthorized",
    });
  });

  it("the model reads HTTP 401 for an UnauthorizedError, never its text (the server's URL, the OAuth error)", () => {
    const errors = [
      new UnauthorizedError("Authentication failed for https://mcp.internal.acme.example:8443/mcp"),
      new UnauthorizedError("Failed to re-authenticate: refresh token rt_8812 of cl-internal-77"),
      new V2UnauthorizedError("Authentication failed for https://mcp.internal.acme.example/mcp"),
    ];
    for (const error of errors) {
      const failure = mapSdkError(error);
      expect(failure).toMatchObject({ text: "HTTP 401 Unauthorized", httpStatus: 401, raw: error });
      expect(classify(failure, policy)).toMatchObject({ reason: "unauthorized" });
    }
  });

  it("fetch failed with cause ECONNREFUSED → connection_refused (not sent); UND_ERR_SOCKET → connection_closed (unknown)", () => {
    expect(judged(fetchFailed("ECONNREFUSED"))).toMatchObject({
      channel: "local",
      local: "connection_refused",
      action: "retry_dependency",
      certainty: "not_sent",
    });
    const socket = judged(fetchFailed("UND_ERR_SOCKET"));
    expect(socket).toMatchObject({
      local: "connection_closed",
      action: "retry_dependency",
      certainty: "unknown",
    });
    expect(socket.failure.text).toBe("Connection closed before the answer arrived");
  });

  it("a spawn error (ENOENT) → local spawn_failed → host", () => {
    const spawn = Object.assign(new Error("spawn /nope ENOENT"), {
      code: "ENOENT",
      syscall: "spawn /nope",
    });
    expect(judged(spawn)).toMatchObject({
      channel: "local",
      local: "spawn_failed",
      action: "host",
    });
  });

  it("UrlElicitationRequiredError (-32042) → host elicitation_required", () => {
    const error = new UrlElicitationRequiredError([
      { mode: "url", message: "Sign in", url: "https://example.com", elicitationId: "e1" },
    ]);
    expect(judged(error)).toMatchObject({
      channel: "protocol",
      origin: "peer",
      action: "host",
      reason: "elicitation_required",
    });
  });

  it("the client's own output-schema checks (-32602/-32600 made locally) → local malformed_result", () => {
    const wrong = new McpError(
      -32602,
      "Structured content does not match the tool's output schema: data/value must be string",
    );
    const missing = new McpError(
      -32600,
      "Tool typed_missing has an output schema but did not return structured content",
    );
    for (const e of [wrong, missing])
      expect(judged(e)).toMatchObject({ channel: "local", local: "malformed_result" });
    expect(judged(new LocalCheckError("malformed_result", "x"))).toMatchObject({
      local: "malformed_result",
    });
  });

  it("a peer's -32602 unknown tool → switch_tool; other -32602 → host; -32603 → host, certainty unknown", () => {
    expect(judged(new McpError(-32602, "Unknown tool: nope"))).toMatchObject({
      action: "switch_tool",
      reason: "unknown_tool",
    });
    expect(judged(new McpError(-32602, "Invalid arguments for tool echo"))).toMatchObject({
      action: "host",
    });
    expect(judged(new McpError(-32603, "Internal error"))).toMatchObject({
      action: "host",
      certainty: "unknown",
    });
  });

  it("keeps the raw error for the host", () => {
    const error = new McpError(-32603, "Internal error", { detail: "secret" });
    const failure: Failure = mapSdkError(error);
    expect(failure.raw).toBe(error);
    expect(failure.data).toEqual({ detail: "secret" });
  });
});

describe("mapSdkError on errors the real SDK client produced (in memory)", () => {
  it("timeout, caller abort, already-aborted, connection closed, Not connected, $ZodError", async () => {
    const { client } = await connectInMemory(createFaultServer());
    clients.push(client);
    const timeout = await rejection(
      client.callTool({ name: "slow", arguments: { ms: 2000 } }, undefined, { timeout: 30 }),
    );
    expect(mapSdkError(timeout, { timeoutMs: 30 }).local).toBe("timeout");

    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    const aborted = await rejection(
      client.callTool({ name: "slow", arguments: { ms: 2000 } }, undefined, { signal: ac.signal }),
    );
    // Shape alone: an McpError -32001 without data, like a peer's. The call site knows better.
    expect(mapSdkError(aborted).channel).toBe("protocol");
    expect(mapSdkError(aborted, { aborted: true }).local).toBe("aborted");

    const early = await rejection(
      client.callTool({ name: "slow", arguments: { ms: 1 } }, undefined, {
        signal: AbortSignal.abort(),
      }),
    );
    expect(mapSdkError(early).local).toBe("aborted");

    const closed = await rejection(client.callTool({ name: "exit_now", arguments: {} }));
    expect(mapSdkError(closed, { connectionClosed: true }).local).toBe("connection_closed");
    const after = await rejection(
      client.callTool({ name: "get_note", arguments: { id: "welcome" } }),
    );
    expect(mapSdkError(after).local).toBe("not_connected");

    const low = await connectInMemory(createLowLevelServer());
    clients.push(low.client);
    const zod = await rejection(low.client.callTool({ name: "bad_result", arguments: {} }));
    expect(mapSdkError(zod).local).toBe("malformed_result");
    const peer = await rejection(
      low.client.callTool({
        name: "peer_error",
        arguments: { code: -32001, message: "Request timed out", data: { timeout: 5 } },
      }),
    );
    // A peer's -32001 with data.timeout: local by shape, the peer's by the adapter's bookkeeping.
    expect(mapSdkError(peer).local).toBe("timeout");
    expect(mapSdkError(peer, { timeoutMs: 60_000 }).channel).toBe("protocol");
  });
});

describe("mapSdkError: @modelcontextprotocol/client 2.x errors (pinned in test/sdk-v2-quirks.test.ts)", () => {
  it("a ProtocolError is the peer's whatever its code, even -32001 with data.timeout and -32000", () => {
    expect(judged(new ProtocolError(-32603, "Internal error", { detail: "x" }))).toMatchObject({
      channel: "protocol",
      origin: "peer",
      action: "host",
      certainty: "unknown",
    });
    const timeout = judged(new ProtocolError(-32001, "Request timed out", { timeout: 5 }), {
      timeoutMs: 5,
    });
    expect(timeout).toMatchObject({ channel: "protocol", origin: "peer", action: "host" });
    const closed = judged(new ProtocolError(-32000, "Connection closed"), {
      connectionClosed: true,
    });
    expect(closed).toMatchObject({ channel: "protocol", origin: "peer" });
    // A code outside the JSON-RPC range is still a JSON-RPC error when 2.x read it off the wire.
    expect(judged(new ProtocolError(1234, "custom"))).toMatchObject({ channel: "protocol" });
  });

  it("a peer's -32602 unknown tool → switch_tool; UrlElicitationRequiredError → host elicitation_required", () => {
    expect(judged(new ProtocolError(-32602, "Unknown tool: nope"))).toMatchObject({
      channel: "protocol",
      action: "switch_tool",
    });
    const elicitation = new V2UrlElicitationRequiredError([
      { mode: "url", message: "Sign in", url: "https://example.com", elicitationId: "e1" },
    ]);
    expect(judged(elicitation)).toMatchObject({
      channel: "protocol",
      origin: "peer",
      action: "host",
      reason: "elicitation_required",
    });
  });

  it("the client's output-schema checks (ProtocolErrors made locally, no prefix) → local malformed_result", () => {
    for (const error of [
      new ProtocolError(-32602, "Structured content does not match the tool's output schema: x"),
      new ProtocolError(-32602, "Failed to validate structured content: boom"),
      new ProtocolError(
        -32600,
        "Tool typed_missing has an output schema but did not return structured content",
      ),
      new ProtocolError(-32602, "Tool 'typed' has an invalid outputSchema: bad pattern"),
    ]) {
      expect(judged(error)).toMatchObject({
        channel: "local",
        local: "malformed_result",
        action: "host",
      });
    }
  });

  it("SdkError REQUEST_TIMEOUT: the SDK's timer (data.timeout / data.maxTotalTimeout) → timeout; a caller's abort (no data) → aborted", () => {
    const timer = judged(
      new SdkError(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: 200 }),
    );
    expect(timer).toMatchObject({
      channel: "local",
      local: "timeout",
      action: "retry_dependency",
      certainty: "unknown",
    });
    expect(timer.failure).toMatchObject({ code: "REQUEST_TIMEOUT", text: "Request timed out" });
    const total = new SdkError(SdkErrorCode.RequestTimeout, "Maximum total timeout exceeded", {
      maxTotalTimeout: 120,
      totalElapsed: 125,
    });
    expect(judged(total)).toMatchObject({ local: "timeout" });
    const abort = judged(new SdkError(SdkErrorCode.RequestTimeout, "run cancelled"));
    expect(abort).toMatchObject({ local: "aborted", action: "stop" });
    expect(abort.failure.text).toBe("The call was aborted");
    // The adapter's own facts win.
    expect(
      judged(new SdkError(SdkErrorCode.RequestTimeout, "x"), { timedOut: true }),
    ).toMatchObject({ local: "timeout" });
  });

  it("SdkError codes: closed → connection_closed; not sent → not_connected; bad result → malformed; the rest → host", () => {
    const cases: [SdkErrorCode, string, string][] = [
      [SdkErrorCode.ConnectionClosed, "connection_closed", "retry_dependency"],
      [SdkErrorCode.NotConnected, "not_connected", "host"],
      [SdkErrorCode.NotInitialized, "not_connected", "host"],
      [SdkErrorCode.AlreadyConnected, "not_connected", "host"],
      [SdkErrorCode.EraNegotiationFailed, "not_connected", "host"],
      [SdkErrorCode.SendFailed, "network", "retry_dependency"],
      [SdkErrorCode.InvalidResult, "malformed_result", "host"],
      [SdkErrorCode.UnsupportedResultType, "malformed_result", "host"],
      [SdkErrorCode.ClientHttpUnexpectedContent, "malformed_result", "host"],
      [SdkErrorCode.CapabilityNotSupported, "thrown", "host"],
      [SdkErrorCode.MethodNotSupportedByProtocolVersion, "thrown", "host"],
      [SdkErrorCode.InputRequiredRoundsExceeded, "thrown", "host"],
      [SdkErrorCode.ListPaginationExceeded, "thrown", "host"],
    ];
    for (const [code, local, action] of cases) {
      const j = judged(new SdkError(code, "x"));
      expect({ code, local: j.local, action: j.action, channel: j.channel }).toEqual({
        code,
        local,
        action,
        channel: "local",
      });
      expect(j.failure.code).toBe(code);
    }
    expect(judged(new SdkError(SdkErrorCode.NotConnected, "x")).certainty).toBe("not_sent");
    expect(judged(new SdkError("A_LATER_CODE" as SdkErrorCode, "x"))).toMatchObject({
      local: "thrown",
      action: "host",
    });
  });

  it("SdkHttpError: by its status whatever its code; 404 → session gone; 429/503 → retry with Retry-After", () => {
    const http = (status: number) =>
      new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, "Error POSTing to endpoint: body", {
        status,
        statusText: "",
      });
    const expired = http(404);
    expect(judged(expired)).toMatchObject({ local: "http_status", reason: "session_expired" });
    expect(isSessionGone(expired)).toBe(true);
    expect(isSessionGone(http(503))).toBe(false);
    expect(isSessionGone(new SdkError(SdkErrorCode.NotConnected, "Not connected"))).toBe(true);
    const limited = judged(http(429), { retryAfterMs: 1500 });
    expect(limited).toMatchObject({ action: "retry_dependency", reason: "rate_limited" });
    expect(limited.failure).toMatchObject({
      httpStatus: 429,
      retryAfterMs: 1500,
      text: "HTTP 429 Too Many Requests",
    });
    expect(judged(http(503))).toMatchObject({ reason: "unavailable" });
    const auth = new SdkHttpError(SdkErrorCode.ClientHttpAuthentication, "401 again", {
      status: 401,
    });
    expect(judged(auth)).toMatchObject({ local: "http_status", reason: "unauthorized" });
  });

  it("UnauthorizedError → HTTP 401; OAuthError → host", () => {
    expect(judged(new V2UnauthorizedError("token expired"))).toMatchObject({
      local: "http_status",
      action: "stop",
      reason: "unauthorized",
    });
    expect(judged(new OAuthError(OAuthErrorCode.InvalidGrant, "grant revoked"))).toMatchObject({
      channel: "local",
      local: "thrown",
      action: "host",
    });
  });

  it("an object that only looks like a 2.x error by name is read by its name; one with a throwing name getter does not crash", () => {
    expect(judged({ name: "SdkError", code: "CONNECTION_CLOSED", message: "x" })).toMatchObject({
      local: "connection_closed",
    });
    const hostile = {
      code: 5,
      get name(): string {
        throw new Error("no");
      },
    };
    expect(mapSdkError(hostile)).toMatchObject({ channel: "local", local: "thrown" });
    expect(judged(hostile)).toMatchObject({ action: "host" });
  });
});

describe("mapSdkError: the legacy SSE transport's HTTP errors (both generations), as Streamable HTTP's", () => {
  /** What both SDKs' `SSEClientTransport.send` throws for a refused POST (body quoted). */
  const refused = (status: number, body = "req 0x7f3a for tenant t-118 refused") =>
    new Error(`Error POSTing to endpoint (HTTP ${status}): ${body}`);

  it("a refused POST is read by its status (its exact shape only): 503/429 retried (failed), 404 session gone, 401/403 stop", () => {
    const unavailable = judged(refused(503));
    expect(unavailable).toMatchObject({
      channel: "local",
      local: "http_status",
      action: "retry_dependency",
      reason: "unavailable",
      certainty: "failed",
    });
    const limited = judged(refused(429), { retryAfterMs: 2000 });
    expect(limited).toMatchObject({ action: "retry_dependency", reason: "rate_limited" });
    expect(limited.failure).toMatchObject({ httpStatus: 429, retryAfterMs: 2000 });
    expect(judged(refused(404))).toMatchObject({
      action: "host",
      reason: "session_expired",
      certainty: "not_sent",
    });
    expect(isSessionGone(refused(404))).toBe(true);
    expect(isSessionGone(refused(503))).toBe(false);
    expect(judged(refused(401))).toMatchObject({ action: "stop", reason: "unauthorized" });
    expect(judged(refused(403))).toMatchObject({ action: "stop", reason: "forbidden" });
    // As over Streamable HTTP: a 500 may follow an effect; another 4xx is the host's.
    expect(judged(refused(500))).toMatchObject({ reason: "upstream_error", certainty: "unknown" });
    expect(judged(refused(400))).toMatchObject({
      action: "host",
      reason: "transport_error",
      certainty: "unknown",
    });
  });

  it("the model reads the status, never the body; the host keeps the error", () => {
    const error = refused(503, "pool db-7 exhausted; key sk-live-9f8e7d6c5b4a3928");
    const failure = mapSdkError(error);
    expect(failure).toMatchObject({ text: "HTTP 503 Service Unavailable", raw: error });
    // A redirect the SDK did not follow: its text names the target, not a status the model reads.
    expect(mapSdkError(refused(307, "Redirect to http://10.0.0.7/x not followed")).text).toBe(
      "HTTP 307 Temporary Redirect",
    );
    // Only the SDK's own shape counts: another prefix, a subclass, a peer's McpError is not read.
    expect(judged(new Error("Error POSTing to endpoint: 503")).local).not.toBe("http_status");
    expect(judged(new Error("x Error POSTing to endpoint (HTTP 503): y")).local).not.toBe(
      "http_status",
    );
    expect(judged(new TypeError("Error POSTing to endpoint (HTTP 503): y")).local).not.toBe(
      "http_status",
    );
    const peer = new McpError(-32603, "Error POSTing to endpoint (HTTP 503): upstream");
    expect(judged(peer)).toMatchObject({ channel: "protocol", origin: "peer" });
  });

  it("SseError (the event stream's GET) is read by its code; no error status is no status", () => {
    /** The EventSource's error event: not read by the adapter. */
    const event = undefined as never;
    for (const error of [
      new SseError(503, "Non-200 status code (503)", event),
      new V2SseError(503, "Non-200 status code (503)", event),
    ]) {
      expect(judged(error)).toMatchObject({
        local: "http_status",
        action: "retry_dependency",
        reason: "unavailable",
      });
      expect(mapSdkError(error).text).toBe("HTTP 503 Service Unavailable");
    }
    expect(judged(new SseError(401, "Non-200 status code (401)", event))).toMatchObject({
      reason: "unauthorized",
    });
    const wrongType = new SseError(
      200,
      'Invalid content type, expected "text/event-stream"',
      event,
    );
    expect(judged(wrongType).local).not.toBe("http_status");
    expect(judged(new V2SseError(undefined, "fetch failed", event)).local).not.toBe("http_status");
  });
});
