import { createGovernor, failureFromError } from "@governor/core";
import { describe, expect, it } from "vitest";
import { mapMcpClientError, mcpAnnotations } from "./mcp-error.ts";
import { SDKS } from "./test-support/sdks.ts";

interface Fields {
  message: string;
  code?: number;
  data?: unknown;
  statusCode?: number;
}

/**
 * `@ai-sdk/mcp` 1.x's `MCPClientError` as its constructor builds it (1.x does not export the
 * class): name `MCPClientError`, the AI SDK's error marker, the fields it was given. The end-to-end
 * tests (mcp-tools.test.ts) meet the real instances; 2.x's real class is checked below.
 */
class MCPClientError extends Error {
  override name = "MCPClientError";
  readonly code: number | undefined;
  readonly data: unknown;
  readonly statusCode: number | undefined;
  constructor(fields: Fields) {
    super(fields.message);
    this.code = fields.code;
    this.data = fields.data;
    this.statusCode = fields.statusCode;
    Object.assign(this, {
      [Symbol.for("vercel.ai.error")]: true,
      [Symbol.for("vercel.ai.error.AI_MCPClientError")]: true,
    });
  }
}

describe("mapMcpClientError (@ai-sdk/mcp's one error class, tagged by origin)", () => {
  it("a JSON-RPC error response is the peer's, on the protocol channel", () => {
    const error = new MCPClientError({ message: "Internal error", code: -32603, data: { x: 1 } });
    expect(mapMcpClientError(error)).toMatchObject({
      channel: "protocol",
      origin: "peer",
      code: -32603,
      text: "Internal error",
    });
  });

  it("an HTTP status from the transport is local, with its status", () => {
    const error = new MCPClientError({
      message: "MCP HTTP Transport Error: POSTing to endpoint (HTTP 503): busy",
      statusCode: 503,
    });
    expect(mapMcpClientError(error)).toMatchObject({
      channel: "local",
      local: "http_status",
      httpStatus: 503,
    });
  });

  it("the model reads an HTTP status, never the response body the client's message quotes", async () => {
    const body = '{"error":"denied for tenant acme-prod-7731","detail":"internal account 99812"}';
    for (const status of [401, 403, 429, 500, 503]) {
      const error = new MCPClientError({
        message: `MCP HTTP Transport Error: POSTing to endpoint (HTTP ${status}): ${body}`,
        statusCode: status,
      });
      const failure = mapMcpClientError(error);
      expect(failure).toMatchObject({ text: `HTTP ${status}`, httpStatus: status, raw: error });
      // Through a run, whatever it decides (a retry that gives up, a stop for credentials).
      const governor = createGovernor(
        { defaults: { retry: { baseDelayMs: 1, maxDelayMs: 2 } } },
        { metrics: false },
      );
      const outcome = await governor
        .startRun()
        .call(
          {
            tool: "t",
            toFailure: (thrown) => mapMcpClientError(thrown) ?? failureFromError(thrown),
          },
          () => Promise.reject(error),
        )
        .catch((thrown: unknown) => thrown);
      const text = JSON.stringify(outcome);
      expect(text, String(status)).not.toMatch(/acme-prod|99812|POSTing/);
    }
  });

  it.each([
    ["Connection closed", "connection_closed"],
    ["Request timed out after 500ms", "timeout"],
    ["Attempted to send a request from a closed client", "not_connected"],
    ["MCP SSE Transport Error: Not connected", "not_connected"],
    ["Server sent invalid initialize result", "thrown"],
  ])("the client's own %j is local (%s), never the tool's text", (message, local) => {
    expect(mapMcpClientError(new MCPClientError({ message }))).toMatchObject({
      channel: "local",
      origin: "local",
      local,
    });
  });

  it("the client's OAuth error goes to the host: not retried as a tool's failure, its raw body never the model's", async () => {
    const oauth = Object.assign(
      new Error(
        "HTTP 500: Invalid OAuth error response: SyntaxError. Raw body: <html>gateway gw-7 tenant acme-7731</html>",
      ),
      {
        name: "MCPClientOAuthError",
        [Symbol.for("vercel.ai.error")]: true,
        [Symbol.for("vercel.ai.error.AI_MCPClientOAuthError")]: true,
      },
    );
    expect(mapMcpClientError(oauth)).toMatchObject({ channel: "local", local: "thrown" });
    for (const effect of ["read_only", "mutating"] as const) {
      let attempts = 0;
      const run = createGovernor({ tools: { t: { effect } } }, { metrics: false }).startRun();
      const outcome = await run
        .call({ tool: "t", toFailure: (x) => mapMcpClientError(x) ?? failureFromError(x) }, () => {
          attempts += 1;
          return Promise.reject(oauth);
        })
        .catch((thrown: unknown) => thrown);
      expect(outcome).toMatchObject({ name: "HostError", reason: "transport_error" });
      expect(attempts).toBe(1);
    }
  });

  it("anything else is left to the default mapping, an error merely named MCPClientError too", () => {
    expect(mapMcpClientError(new Error("Connection closed"))).toBeUndefined();
    const named = Object.assign(new Error("Connection closed"), { name: "MCPClientError" });
    expect(mapMcpClientError(named)).toBeUndefined();
    expect(mapMcpClientError("Connection closed")).toBeUndefined();
    expect(mapMcpClientError(null)).toBeUndefined();
  });
});

const v7 = SDKS.find((sdk) => sdk.name === "ai 7");

it("@ai-sdk/mcp 2.x's own MCPClientError is recognized the same way", async (ctx) => {
  if (v7?.skipReason !== undefined) ctx.skip(v7.skipReason);
  const { MCPClientError: Real } = await import("ai-mcp-v7");
  expect(mapMcpClientError(new Real({ message: "Boom", code: -32050 }))).toMatchObject({
    channel: "protocol",
    code: -32050,
  });
  expect(mapMcpClientError(new Real({ message: "Connection closed" }))).toMatchObject({
    local: "connection_closed",
  });
  const { MCPClientOAuthError } = await import("ai-mcp-v7");
  expect(mapMcpClientError(new MCPClientOAuthError({ message: "invalid_grant" }))).toMatchObject({
    channel: "local",
    local: "thrown",
  });
});

describe("mcpAnnotations", () => {
  it("reads the hints @ai-sdk/mcp keeps in tool.metadata.annotations, booleans only", () => {
    expect(
      mcpAnnotations({
        metadata: { annotations: { readOnlyHint: true, destructiveHint: "no", title: "T" } },
      }),
    ).toEqual({ readOnlyHint: true });
    expect(mcpAnnotations({ metadata: { annotations: { title: "T" } } })).toBeUndefined();
    expect(mcpAnnotations({ metadata: {} })).toBeUndefined();
    expect(mcpAnnotations({})).toBeUndefined();
  });
});
