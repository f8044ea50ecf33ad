import { describe, expect, it } from "vitest";
import { classify } from "./classify.ts";
import { type Failure, failureFromError, failureFromResult, localFailure } from "./failure.ts";
import { loadPolicy, resolveToolPolicy } from "./policy.ts";

const tool = (policy = {}, name = "t", server?: string) =>
  resolveToolPolicy(loadPolicy(policy), name, server);
const textFailure = (text: string): Failure =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });

describe("classify", () => {
  it("lets the policy win over every other step", () => {
    const p = tool({
      tools: {
        t: { rules: [{ match: "quota", action: "retry_dependency", reason: "rate_limited" }] },
      },
    });
    expect(classify(textFailure("Monthly quota exceeded"), p)).toMatchObject({
      action: "retry_dependency",
      reason: "rate_limited",
      source: "policy",
    });
  });

  it("orders rules: the tool's, then the server's, then global", () => {
    const policy = {
      defaults: { rules: [{ match: "boom", action: "stop" as const }] },
      servers: {
        s: {
          rules: [{ match: "boom", action: "switch_tool" as const }],
          tools: { t: { rules: [{ match: "boom", action: "correct_arguments" as const }] } },
        },
      },
    };
    expect(classify(textFailure("boom"), tool(policy, "t", "s")).action).toBe("correct_arguments");
    expect(classify(textFailure("boom"), tool(policy, "u", "s")).action).toBe("switch_tool");
    expect(classify(textFailure("boom"), tool(policy, "u")).action).toBe("stop");
  });

  it("matches rules by code (JSON-RPC, HTTP status or Node code)", () => {
    const p = tool({
      defaults: { rules: [{ code: 418, action: "stop", reason: "business_rule" }] },
    });
    const f = failureFromResult({ content: [], isError: true, structuredContent: { status: 418 } });
    expect(classify(f, p)).toMatchObject({ action: "stop", reason: "business_rule" });
  });

  it("sends JSON-RPC errors from the peer to the host, except an unknown tool", () => {
    const p = tool();
    expect(
      classify(failureFromError({ code: -32601, message: "Method not found" }), p),
    ).toMatchObject({ action: "host", reason: "protocol_error" });
    expect(
      classify(failureFromError({ code: -32603, message: "Internal error" }), p),
    ).toMatchObject({ action: "host", certainty: "unknown" });
    expect(
      classify(
        failureFromError({ code: -32602, message: "MCP error -32602: Tool nope not found" }),
        p,
      ),
    ).toMatchObject({ action: "switch_tool", reason: "unknown_tool" });
    expect(
      classify(failureFromError({ code: -32602, message: "Unknown tool: nope" }), p),
    ).toMatchObject({ action: "switch_tool" });
    expect(classify(failureFromError({ code: -32602, message: "Invalid params" }), p).action).toBe(
      "host",
    );
    expect(
      classify(failureFromError({ code: -32001, message: "Session not found" }), p),
    ).toMatchObject({ action: "host", reason: "session_expired" });
    expect(
      classify(failureFromError({ code: -32042, message: "URL elicitation required" }), p).reason,
    ).toBe("elicitation_required");
  });

  it("lets a server's -32602 be bad arguments when the policy says so", () => {
    const p = tool({ servers: { old: { invalidParamsAsArguments: true } } }, "t", "old");
    expect(
      classify(
        failureFromError({ code: -32602, message: "Invalid params: id must be a string" }),
        p,
      ),
    ).toMatchObject({
      action: "correct_arguments",
      reason: "invalid_argument",
    });
  });

  it("recognizes the McpServer text forms of unknown tools and input validation", () => {
    const p = tool();
    expect(classify(textFailure("MCP error -32602: Tool search_repos not found"), p)).toMatchObject(
      { action: "switch_tool", reason: "unknown_tool" },
    );
    expect(
      classify(
        textFailure("MCP error -32602: Input validation error: Invalid arguments for tool x"),
        p,
      ),
    ).toMatchObject({
      action: "correct_arguments",
    });
  });

  it("classifies local failures with their certainty", () => {
    const p = tool();
    expect(classify(localFailure("timeout"), p)).toMatchObject({
      action: "retry_dependency",
      certainty: "unknown",
    });
    expect(classify(localFailure("connection_refused"), p)).toMatchObject({
      action: "retry_dependency",
      certainty: "not_sent",
    });
    expect(classify(localFailure("aborted"), p)).toMatchObject({
      action: "stop",
      reason: "aborted",
    });
    expect(classify(localFailure("malformed_result"), p)).toMatchObject({
      action: "host",
      reason: "malformed_response",
    });
    const expired = { ...localFailure("http_status"), httpStatus: 404 };
    expect(classify(expired, p)).toMatchObject({ action: "host", reason: "session_expired" });
    const limited = { ...localFailure("http_status"), httpStatus: 429, retryAfterMs: 2000 };
    expect(classify(limited, p)).toMatchObject({
      action: "retry_dependency",
      reason: "rate_limited",
      retryAfterMs: 2000,
    });
  });

  it("sets certainty per failure class, not per channel", () => {
    const p = tool();
    expect(classify(textFailure("504 Gateway Timeout"), p).certainty).toBe("unknown");
    expect(classify(textFailure("404 Not Found"), p).certainty).toBe("failed");
    expect(classify(textFailure("503 Service Unavailable"), p).certainty).toBe("failed");
  });

  it("reads the draft tool-failure metadata; 'not retryable' only makes it more conservative", () => {
    const p = tool();
    const meta = (m: object) =>
      failureFromResult({
        content: [{ type: "text", text: "odd" }],
        isError: true,
        _meta: { "io.modelcontextprotocol/toolFailure": m },
      });
    expect(classify(meta({ retryable: true }), p)).toMatchObject({
      action: "retry_dependency",
      source: "signal",
    });
    expect(classify(meta({ class: "not_found" }), p)).toMatchObject({
      action: "correct_arguments",
      reason: "not_found",
    });
    expect(classify(meta({ class: "rate_limited", retryable: false }), p).action).toBe("stop");
  });

  it("defaults to correct_arguments for text nothing matches", () => {
    expect(classify(textFailure("the frobnicator sneezed"), tool())).toMatchObject({
      action: "correct_arguments",
      reason: "unclassified",
      source: "default",
    });
  });
});
