import { RE2JS } from "re2js";
import { describe, expect, it, vi } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import { classify } from "./classify.ts";
import { decide } from "./decide.ts";
import { explainClassification } from "./explain.ts";
import { type Failure, failureFromError, failureFromResult, localFailure } from "./failure.ts";

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
        tool({}, "nope"),
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
    expect(
      classify(
        textFailure("MCP error -32602: Tool search_repos not found"),
        tool({}, "search_repos"),
      ),
    ).toMatchObject({ action: "switch_tool", reason: "unknown_tool" });
    expect(
      classify(
        textFailure("MCP error -32602: Input validation error: Invalid arguments for tool x"),
        p,
      ),
    ).toMatchObject({
      action: "correct_arguments",
    });
  });

  it("reads a tool's text naming ANOTHER tool as unknown as a missing thing, not as the model's wrong tool", () => {
    // `deploy` exists (it answered) and failed on a tool it uses: switching tools after a write
    // that ran could make it twice.
    const deploy = tool({ tools: { deploy: { effect: "mutating" } } }, "deploy");
    for (const text of [
      "MCP error -32602: Tool kubectl not found",
      "Error: Tool 'helm' does not exist",
      "Unknown tool: kubectl",
      "upstream said: no tool named kubectl",
    ]) {
      expect(classify(textFailure(text), deploy), text).toMatchObject({
        action: "correct_arguments",
        reason: "not_found",
        certainty: "unknown",
      });
    }
    // The tool called, with or without a server prefix either side, or no name: unknown tool.
    for (const [text, name] of [
      ["MCP error -32602: Tool deploy not found", "deploy"],
      ["Unknown tool: deploy.", "deploy"],
      ["Unknown tool: 'DEPLOY'", "deploy"],
      ["Tool deploy not found", "k8s__deploy"],
      ["Tool k8s__deploy not found", "deploy"],
      ["Unknown tool", "deploy"],
      ["No such tool", "deploy"],
    ] as const) {
      expect(classify(textFailure(text), tool({}, name)), text).toMatchObject({
        action: "switch_tool",
        reason: "unknown_tool",
      });
    }
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

  it("sets certainty per failure class for structured signals", () => {
    const p = tool();
    const status = (s: number) =>
      failureFromResult({ content: [], isError: true, structuredContent: { status: s } });
    expect(classify(status(504), p).certainty).toBe("unknown");
    expect(classify(status(404), p).certainty).toBe("failed");
    expect(classify(status(503), p).certainty).toBe("failed");
    expect(classify(localFailure("connection_refused"), p).certainty).toBe("not_sent");
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

  it("a text that says it is not to be retried only makes a retry read from it more conservative", () => {
    const p = tool();
    for (const text of [
      '{"error":{"code":"UNAVAILABLE","message":"Backend busy","retryable":false}}',
      "Upstream timeout (non-retryable): the order may already exist",
      "503 Service Unavailable - do not retry, the account is being migrated",
      "Gateway timeout. Retrying will not help until the ledger is repaired",
    ]) {
      expect(classify(textFailure(text), p), text).toMatchObject({
        action: "stop",
        reason: "retries_exhausted",
        certainty: "unknown",
        source: "rule",
      });
    }
    // A retry it does not deny stays one; a correction or a stop is not changed by the words.
    expect(classify(textFailure('{"message":"Backend busy","retryable":true}'), p).action).toBe(
      "retry_dependency",
    );
    expect(classify(textFailure("Invalid email address (non-retryable)"), p)).toMatchObject({
      action: "correct_arguments",
      reason: "invalid_argument",
    });
    expect(classify(textFailure("Permission denied. Do not retry."), p).reason).toBe("forbidden");
    const f = textFailure("Upstream timeout (non-retryable)");
    expect(explainClassification(f, p, classify(f, p)).detail).toMatch(
      /; the text says the failure is not to be retried, so it stops$/,
    );
  });

  it("defaults to correct_arguments for text nothing matches", () => {
    expect(classify(textFailure("frobnicator sneezed"), tool())).toMatchObject({
      action: "correct_arguments",
      reason: "unclassified",
      source: "default",
    });
  });

  describe("issue 8.1: a tool's own error text never makes a mutation's outcome certain", () => {
    const mutating = (policy = {}) => tool(policy, "create_order");
    const decideFor = (f: Failure, policy = {}, effect: "mutating" | "idempotent" = "mutating") =>
      decide({
        classification: classify(f, mutating(policy)),
        tool: mutating(policy),
        effect,
        attempt: 1,
        repeats: 1,
        keyed: false,
        remainingMs: Number.POSITIVE_INFINITY,
        random: () => 0.5,
      });

    it("a retryable text on a mutating tool without key or verify stops as uncertain_mutation", () => {
      for (const text of [
        "database is busy, try again later",
        "503 Service Unavailable",
        "could not connect to the mail service",
        "Too Many Requests",
      ]) {
        expect(classify(textFailure(text), mutating()), text).toMatchObject({
          action: "retry_dependency",
          certainty: "unknown",
        });
        expect(decideFor(textFailure(text)), text).toMatchObject({
          action: "stop",
          reason: "uncertain_mutation",
          personResolvable: true,
        });
      }
    });

    it("every text verdict of the tool channel is unknown, the default included", () => {
      for (const text of ["Invalid date", "404 Not Found", "Permission denied", "frobnicated"]) {
        expect(classify(textFailure(text), mutating()).certainty, text).toBe("unknown");
      }
      // A plain-function tool that threw: the same channel, the same rule.
      expect(classify(failureFromError(new Error("try again later")), mutating())).toMatchObject({
        action: "retry_dependency",
        certainty: "unknown",
      });
    });

    it("structured signals sent on purpose, the policy, or the tool's effect still allow a retry", () => {
      const busy = "database is busy, try again later";
      const meta = failureFromResult({
        content: [{ type: "text", text: busy }],
        isError: true,
        _meta: { "io.modelcontextprotocol/toolFailure": { class: "unavailable", retryable: true } },
      });
      expect(decideFor(meta).action).toBe("retry_dependency");
      const status = failureFromResult({
        content: [{ type: "text", text: busy }],
        isError: true,
        structuredContent: { error: { status: 503 } },
      });
      expect(decideFor(status).action).toBe("retry_dependency");
      const trusted = {
        tools: {
          create_order: {
            rules: [
              { match: "busy", action: "retry_dependency" as const, certainty: "failed" as const },
            ],
          },
        },
      };
      expect(classify(textFailure(busy), mutating(trusted))).toMatchObject({
        source: "policy",
        certainty: "failed",
      });
      expect(decideFor(textFailure(busy), trusted).action).toBe("retry_dependency");
      // A rule without `certainty` changes the action, not what the text can prove.
      const untrusted = {
        tools: {
          create_order: { rules: [{ match: "busy", action: "retry_dependency" as const }] },
        },
      };
      expect(decideFor(textFailure(busy), untrusted).reason).toBe("uncertain_mutation");
      expect(decideFor(textFailure(busy), {}, "idempotent").action).toBe("retry_dependency");
    });

    it("a write done with a failed side step is a partial success: a stop, never a repeat", () => {
      for (const text of [
        "Order ORD-1001 was created, but we could not connect to the mail service",
        "Invoice INV-7 saved; webhook delivery failed: 503 Service Unavailable",
        "Charge captured. Ledger sync failed: database is busy, try again later",
      ]) {
        expect(classify(textFailure(text), mutating()), text).toMatchObject({
          action: "stop",
          reason: "partial_success",
          certainty: "unknown",
        });
        // Even for a tool the policy calls idempotent: the write is done, repeating adds nothing.
        expect(decideFor(textFailure(text), {}, "idempotent"), text).toMatchObject({
          action: "stop",
          reason: "partial_success",
          personResolvable: true,
        });
      }
      for (const text of [
        "Order was not created: invalid email",
        "Failed to create order: database is busy",
        "Invoice INV-7 already created; duplicate request",
      ]) {
        expect(classify(textFailure(text), mutating()).reason, text).not.toBe("partial_success");
      }
    });
  });

  describe("issue 8.11: JSON-RPC errors are told apart by their code", () => {
    it("a -32603 with an unknown-tool phrase goes to the host, certainty unknown", () => {
      const f = failureFromError({ code: -32603, message: "tool registry not found" });
      expect(classify(f, tool({}, "create_order"))).toMatchObject({
        action: "host",
        reason: "protocol_error",
        certainty: "unknown",
      });
      const internal = failureFromError({ code: -32603, message: "Unknown tool: create_order" });
      expect(classify(internal, tool({}, "create_order")).action).toBe("host");
    });

    it("under -32601/-32602 only anchored phrasings about the tool called are an unknown tool", () => {
      const p = tool({}, "search_repos");
      const err = (code: number, message: string) =>
        classify(failureFromError({ code, message }), p);
      expect(err(-32601, "Unknown tool: search_repos").action).toBe("switch_tool");
      expect(err(-32602, "tool 'search_repos' not found: tool not found").action).toBe(
        "switch_tool",
      );
      expect(err(-32602, "Tool registry not found")).toMatchObject({ action: "host" });
      expect(err(-32602, "Invalid params: unknown tool in field x")).toMatchObject({
        action: "host",
      });
      expect(err(-32600, "Unknown tool: search_repos").action).toBe("host");
      // A prefixed client-side name still matches the server's name.
      expect(
        classify(
          failureFromError({ code: -32602, message: "Tool search_repos not found" }),
          tool({}, "github__search_repos"),
        ).action,
      ).toBe("switch_tool");
    });

    it("certainty: refused codes are failed, -32603, server-defined and foreign codes unknown", () => {
      const certainty = (code: number) =>
        classify(failureFromError({ code, message: "x" }, { jsonRpc: true }), tool()).certainty;
      for (const code of [-32700, -32600, -32601, -32602]) expect(certainty(code)).toBe("failed");
      for (const code of [-32603, -32000, -32050, -32099, -32001, 0, 408]) {
        expect(certainty(code), String(code)).toBe("unknown");
      }
    });

    it("a gRPC UNAVAILABLE (14) thrown by a plain-function tool is the tool's failure, retried", () => {
      const grpc = Object.assign(new Error("14 UNAVAILABLE: No connection established"), {
        code: 14,
        details: "No connection established",
      });
      const f = failureFromError(grpc);
      expect(f).toMatchObject({ channel: "tool", code: 14 });
      expect(classify(f, tool({}, "lookup"))).toMatchObject({
        action: "retry_dependency",
        reason: "unavailable",
      });
      const notFound = Object.assign(new Error("5 NOT_FOUND: order 7"), { code: 5 });
      expect(classify(failureFromError(notFound), tool()).action).toBe("correct_arguments");
    });
  });

  describe("issue 8.12: policy patterns run in linear time, compiled once, on a capped text", () => {
    it("quota.*reset on a 234 KB text answers at once", () => {
      const p = tool({ defaults: { rules: [{ match: "quota.*reset", action: "stop" }] } });
      const big = textFailure("quota ".repeat(39_000));
      const started = performance.now();
      expect(classify(big, p).source).not.toBe("policy");
      // V8's backtracking took 14 s here; a catastrophic (a+)+$ cannot stall it either.
      expect(performance.now() - started).toBeLessThan(1_000);
      const nested = tool({ defaults: { rules: [{ match: "(a+)+$", action: "stop" }] } });
      const again = performance.now();
      // 2 s in V8 for 26 letters, doubling with each one; linear here, whatever the length.
      classify(textFailure(`${"a".repeat(26)}!`), nested);
      classify(textFailure(`${"a".repeat(3_000)}!`), nested);
      expect(performance.now() - again).toBeLessThan(500);
    });

    it("compiles each pattern at load, not per call", () => {
      const compile = vi.spyOn(RE2JS, "compile");
      try {
        const p = tool({ defaults: { rules: [{ match: "issue-8-12-once", action: "stop" }] } });
        const atLoad = compile.mock.calls.length;
        expect(atLoad).toBe(1);
        for (let i = 0; i < 50; i++) classify(textFailure("boom"), p);
        expect(compile.mock.calls.length).toBe(atLoad);
      } finally {
        compile.mockRestore();
      }
    });

    it("sees only the first 4000 characters, like the built-in rules", () => {
      const p = tool({ defaults: { rules: [{ match: "needle", action: "stop" }] } });
      expect(classify(textFailure(`${"x".repeat(3_990)} needle`), p).source).toBe("policy");
      expect(classify(textFailure(`${"x".repeat(4_000)} needle`), p).source).not.toBe("policy");
    });

    it("matches case-insensitively, and refuses at load what RE2 cannot run", () => {
      const p = tool({ defaults: { rules: [{ match: "^transfer REFUSED", action: "stop" }] } });
      expect(classify(textFailure("Transfer refused: over limit"), p).source).toBe("policy");
      expect(() =>
        loadPolicy({ tools: { t: { rules: [{ match: "(a)\\1", action: "stop" }] } } }),
      ).toThrow(/tools\.t\.rules\.0\.match: must be a regular expression in RE2 syntax/);
      expect(() =>
        loadPolicy({ defaults: { rules: [{ match: "x(?=y)", action: "stop" }] } }),
      ).toThrow(/defaults\.rules\.0\.match: .*no lookahead/);
    });
  });

  describe("policy rules only match what they say", () => {
    it("a code rule does not match another code, a match rule not another text", () => {
      const p = tool({
        defaults: {
          rules: [
            { code: 418, action: "stop" as const },
            { match: "^teapot$", action: "stop" as const },
            { code: "ECONNRESET", match: "reset", action: "stop" as const },
          ],
        },
      });
      const status = (s: number) =>
        failureFromResult({ content: [], isError: true, structuredContent: { status: s } });
      expect(classify(status(418), p).source).toBe("policy");
      expect(classify(status(419), p).source).not.toBe("policy");
      expect(classify(textFailure("teapot"), p).source).toBe("policy");
      expect(classify(textFailure("a teapot"), p).source).not.toBe("policy");
      // Both conditions of a rule must hold.
      const reset = failureFromError(
        Object.assign(new Error("reset by peer"), { code: "ECONNRESET" }),
      );
      expect(classify(reset, p).source).toBe("policy");
      const other = failureFromError(Object.assign(new Error("closed"), { code: "ECONNRESET" }));
      expect(classify(other, p).source).not.toBe("policy");
    });
  });

  it("issue 8.15: a tool-failure class named like an Object.prototype member is not a class", () => {
    const f = failureFromResult({
      content: [{ type: "text", text: "odd" }],
      isError: true,
      _meta: { "io.modelcontextprotocol/toolFailure": { class: "constructor" } },
    });
    expect(classify(f, tool())).toMatchObject({ action: "correct_arguments", source: "default" });
  });
});
