import { describe, expect, it } from "vitest";
import {
  failureFromError,
  failureFromResult,
  localFailure,
  parseRetryAfter,
  stripMcpPrefix,
} from "./failure.ts";

describe("stripMcpPrefix", () => {
  it("strips single and doubled SDK prefixes", () => {
    expect(stripMcpPrefix("MCP error -32602: Tool x not found")).toBe("Tool x not found");
    expect(stripMcpPrefix("MCP error -32603: MCP error -32603: boom")).toBe("boom");
    expect(stripMcpPrefix("plain")).toBe("plain");
  });
});

describe("failureFromResult", () => {
  it("reads one text block as its text, three joined in order, none as empty", () => {
    const text = (...blocks: unknown[]) =>
      failureFromResult({ content: blocks, isError: true }).text;
    expect(text({ type: "image", data: "x" }, { type: "text", text: "only" })).toBe("only");
    expect(
      text({ type: "text", text: "a" }, { type: "text", text: "b" }, { type: "text", text: "c" }),
    ).toBe("a\nb\nc");
    expect(text({ type: "text", text: "" }, { type: "text", text: "b" })).toBe("\nb");
    expect(text({ type: "image", data: "x" })).toBe("");
    expect(text()).toBe("");
  });

  it("joins every text block, keeps structured content and the draft metadata", () => {
    const f = failureFromResult(
      {
        content: [
          { type: "text", text: "MCP error -32602: first" },
          { type: "image", data: "x" },
          { type: "text", text: "second" },
        ],
        isError: true,
        structuredContent: { error: { status: 429, retryAfterMs: 1500 } },
        _meta: {
          "io.modelcontextprotocol/toolFailure": { class: "rate_limited", retryable: true },
        },
      },
      0,
    );
    expect(f).toMatchObject({
      channel: "tool",
      origin: "peer",
      text: "first\nsecond",
      httpStatus: 429,
      retryAfterMs: 1500,
      toolFailure: { class: "rate_limited", retryable: true },
    });
  });

  it("reads retryNotBefore as a delay from now", () => {
    const f = failureFromResult(
      {
        content: [],
        isError: true,
        _meta: {
          "io.modelcontextprotocol/toolFailure": { retryNotBefore: "1970-01-01T00:00:02.000Z" },
        },
      },
      500,
    );
    expect(f.retryAfterMs).toBe(1500);
  });

  it("survives junk content", () => {
    expect(
      failureFromResult({ content: "not an array" as unknown as [], isError: true }).text,
    ).toBe("");
  });

  it("never throws on a hostile result (a getter or a proxy that throws): read as one without text", () => {
    const secret = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";
    const boom = () => {
      throw new Error(secret);
    };
    const trap = new Proxy([], { get: boom, has: boom, ownKeys: boom });
    const hostile: unknown[] = [
      {
        isError: true,
        content: [
          {
            type: "text",
            get text() {
              return boom();
            },
          },
        ],
      },
      { isError: true, content: trap },
      {
        isError: true,
        content: [],
        get structuredContent() {
          return boom();
        },
      },
      { isError: true, content: [], _meta: trap },
    ];
    for (const result of hostile) {
      const f = failureFromResult(result as Parameters<typeof failureFromResult>[0], 0);
      expect(f).toMatchObject({ channel: "tool", origin: "peer", text: "" });
      expect(f.raw).toBe(result);
      expect(JSON.stringify({ ...f, raw: undefined })).not.toContain(secret);
    }
  });
});

describe("failureFromError", () => {
  it("treats an untagged JSON-RPC shaped error as the peer's protocol error", () => {
    const f = failureFromError({ code: -32601, message: "Method not found", data: { x: 1 } });
    expect(f).toMatchObject({ channel: "protocol", origin: "peer", code: -32601, data: { x: 1 } });
  });

  it("issue 8.11: only an McpError or a JSON-RPC code is a protocol error", () => {
    // gRPC statuses thrown by a plain-function tool: the tool's own failure, code kept for rules.
    for (const [code, message] of [
      [14, "14 UNAVAILABLE: No connection established"],
      [5, "5 NOT_FOUND: order 7"],
    ] as const) {
      const grpc = Object.assign(new Error(message), { code, details: "x", metadata: {} });
      expect(failureFromError(grpc), message).toMatchObject({
        channel: "tool",
        origin: "peer",
        code,
        local: "thrown",
      });
    }
    // The JSON-RPC range, both ends, is a protocol error even untagged.
    for (const code of [-32768, -32000, -32603]) {
      expect(failureFromError({ code, message: "x" }).channel, String(code)).toBe("protocol");
    }
    expect(failureFromError({ code: -31999, message: "x" }).channel).toBe("tool");
    expect(failureFromError({ code: -32769, message: "x" }).channel).toBe("tool");
    // The MCP SDK's McpError carries whatever code the server sent (Python sends 0 and 408).
    const mcpError = Object.assign(new Error("MCP error 0: Request cancelled"), {
      name: "McpError",
      code: 0,
    });
    expect(failureFromError(mcpError)).toMatchObject({ channel: "protocol", code: 0 });
    // A caller that read a JSON-RPC error off the wire says so.
    expect(
      failureFromError({ code: 408, message: "Timed out" }, { origin: "peer", jsonRpc: true }),
    ).toMatchObject({ channel: "protocol", code: 408 });
  });

  it("issue 8.15 (sibling): a string code named like an Object.prototype member is the tool's", () => {
    for (const code of ["constructor", "toString", "__proto__"]) {
      const f = failureFromError(Object.assign(new Error("nope"), { code }));
      expect(f, code).toMatchObject({ channel: "tool", local: "thrown" });
    }
  });

  it("maps Node error codes, also behind fetch failed", () => {
    expect(failureFromError(Object.assign(new Error("x"), { code: "ECONNRESET" }))).toMatchObject({
      channel: "local",
      local: "connection_closed",
      code: "ECONNRESET",
    });
    const fetchFailed = new TypeError("fetch failed", {
      cause: Object.assign(new Error("c"), { code: "ECONNREFUSED" }),
    });
    expect(failureFromError(fetchFailed)).toMatchObject({ local: "connection_refused" });
  });

  it("recognizes aborts and honors a local kind given by the call site", () => {
    expect(
      failureFromError(new DOMException("This operation was aborted", "AbortError")).local,
    ).toBe("aborted");
    const timeout = failureFromError(
      { code: -32001, message: "MCP error -32001: Request timed out" },
      { local: "timeout" },
    );
    expect(timeout).toMatchObject({
      channel: "local",
      origin: "local",
      local: "timeout",
      text: "Request timed out",
    });
  });

  it("reads retry hints from data", () => {
    expect(
      failureFromError({ code: -32000, message: "busy", data: { retryAfterMs: 250 } }).retryAfterMs,
    ).toBe(250);
    expect(
      failureFromError({ code: -32000, message: "busy", data: { retryAfter: "2" } }).retryAfterMs,
    ).toBe(2000);
  });

  it.each([
    ["null", null],
    ["undefined", undefined],
    ["number", 42],
    ["boolean", false],
    ["symbol", Symbol("s")],
    ["bigint", 7n],
    ["function", () => 1],
  ])(
    "a thrown %s carries nothing a model can act on: malformed_result, for the host",
    (what, thrown) => {
      const f = failureFromError(thrown);
      expect(f).toMatchObject({
        channel: "local",
        origin: "local",
        local: "malformed_result",
        text: `The tool threw ${what}, not an error`,
      });
      expect(f.raw).toBe(thrown);
      // The caller that knows the kind keeps it.
      expect(failureFromError(thrown, { local: "timeout" }).local).toBe("timeout");
    },
  );

  it("never throws on odd values", () => {
    expect(failureFromError(undefined).local).toBe("malformed_result");
    expect(failureFromError("text").text).toBe("text");
    expect(failureFromError({}).local).toBe("thrown");
    const hostile = {
      get message() {
        throw new Error("no");
      },
    };
    expect(failureFromError(hostile)).toMatchObject({ text: "unreadable error", local: "thrown" });
  });
});

describe("parseRetryAfter", () => {
  it("reads seconds and HTTP dates", () => {
    expect(parseRetryAfter("3", 0)).toBe(3000);
    expect(parseRetryAfter("Thu, 01 Jan 1970 00:00:05 GMT", 1000)).toBe(4000);
    expect(parseRetryAfter("soon", 0)).toBeUndefined();
    expect(parseRetryAfter(-1, 0)).toBeUndefined();
  });
});

describe("localFailure", () => {
  it("builds named local failures", () => {
    expect(localFailure("timeout")).toEqual({
      channel: "local",
      origin: "local",
      text: "Request timed out",
      local: "timeout",
    });
  });
});
