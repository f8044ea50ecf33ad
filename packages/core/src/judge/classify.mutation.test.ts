import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Action, Certainty, Reason } from "../types.ts";
import { classify } from "./classify.ts";
import { decide } from "./decide.ts";
import type { Failure, LocalKind } from "./failure.ts";

// Pins what mutation testing found untested in `classify` (issue 8): the certainty taken from a
// tool's own failure metadata, policy rules that must not match (by code or by pattern), the
// certainty of protocol errors by code range, and the tables of local kinds and metadata classes.

const tool = (policy: object = {}, name = "t", server?: string) =>
  resolveToolPolicy(loadPolicy(policy), name, server);
const failure = (f: Partial<Failure>): Failure => ({
  channel: "tool",
  origin: "peer",
  text: "frobnicator sneezed",
  ...f,
});
const meta = (m: object, extra: Partial<Failure> = {}) => failure({ toolFailure: m, ...extra });
const protocol = (code: number, text = "Server error") =>
  failure({ channel: "protocol", code, text });
const verdict = (f: Failure, policy: object = {}) => {
  const { action, reason, certainty } = classify(f, tool(policy));
  return { action, reason, certainty };
};

describe("classify: the tool's own failure metadata", () => {
  it("issue 8 (mutation): a timeout class keeps certainty unknown, so an unkeyed write is not retried", () => {
    const c = classify(meta({ class: "timeout" }), tool());
    expect(c).toMatchObject({
      action: "retry_dependency",
      reason: "timeout",
      certainty: "unknown",
    });
    expect(classify(meta({ class: "timeout", retryable: true }), tool()).certainty).toBe("unknown");
    const d = decide({
      classification: c,
      tool: tool(),
      effect: "mutating",
      attempt: 1,
      repeats: 1,
      keyed: false,
      remainingMs: 60_000,
      random: () => 0.5,
    });
    expect(d).toMatchObject({ action: "stop", reason: "uncertain_mutation" });
  });

  it("'not retryable' on a timeout stops and keeps the outcome unknown", () => {
    expect(verdict(meta({ class: "timeout", retryable: false }))).toEqual({
      action: "stop",
      reason: "retries_exhausted",
      certainty: "unknown",
    });
    expect(verdict(meta({ class: "rate_limited", retryable: false }))).toEqual({
      action: "stop",
      reason: "retries_exhausted",
      certainty: "failed",
    });
  });

  it("'not retryable' leaves a class the runtime would not retry as it is", () => {
    expect(verdict(meta({ class: "not_found", retryable: false }))).toEqual({
      action: "correct_arguments",
      reason: "not_found",
      certainty: "failed",
    });
  });

  it("'retryable' keeps a retryable class and makes any other one 'unavailable'", () => {
    expect(verdict(meta({ class: "rate_limited", retryable: true }))).toEqual({
      action: "retry_dependency",
      reason: "rate_limited",
      certainty: "failed",
    });
    expect(verdict(meta({ class: "not_found", retryable: true }))).toEqual({
      action: "retry_dependency",
      reason: "unavailable",
      certainty: "failed",
    });
    expect(verdict(meta({ class: "no_such_class", retryable: true }))).toEqual({
      action: "retry_dependency",
      reason: "unavailable",
      certainty: "failed",
    });
  });

  it.each<[string, Reason, Action]>([
    ["invalid_argument", "invalid_argument", "correct_arguments"],
    ["invalid_arguments", "invalid_argument", "correct_arguments"],
    ["validation", "invalid_argument", "correct_arguments"],
    ["not_found", "not_found", "correct_arguments"],
    ["conflict", "conflict", "correct_arguments"],
    ["rate_limited", "rate_limited", "retry_dependency"],
    ["rate_limit", "rate_limited", "retry_dependency"],
    ["unavailable", "unavailable", "retry_dependency"],
    ["transient", "unavailable", "retry_dependency"],
    ["timeout", "timeout", "retry_dependency"],
    ["unauthorized", "unauthorized", "stop"],
    ["authentication", "unauthorized", "stop"],
    ["forbidden", "forbidden", "stop"],
    ["permission", "forbidden", "stop"],
    ["quota", "quota_exceeded", "stop"],
    ["quota_exceeded", "quota_exceeded", "stop"],
    ["business_rule", "business_rule", "stop"],
    ["not_supported", "not_supported", "switch_tool"],
    ["unsupported", "not_supported", "switch_tool"],
  ])("reads the class %s as %s", (cls, reason, action) => {
    expect(classify(meta({ class: cls }), tool())).toMatchObject({
      action,
      reason,
      source: "signal",
    });
  });

  it("an unknown class without a retry flag says nothing: the next steps decide", () => {
    expect(classify(meta({ class: "no_such_class" }), tool())).toMatchObject({
      reason: "unclassified",
      source: "default",
    });
    expect(classify(meta({ class: "no_such_class" }, { httpStatus: 404 }), tool())).toMatchObject({
      reason: "not_found",
      source: "signal",
    });
    expect(classify(meta({}), tool())).toMatchObject({ source: "default" });
  });
});

describe("classify: policy rules", () => {
  const boom = { text: "boom: frobnicator sneezed" };

  it("a rule's pattern must match the text (case-insensitive)", () => {
    const p = { defaults: { rules: [{ match: "quota", action: "stop" }] } };
    expect(classify(failure({ text: "QUOTA reached" }), tool(p)).source).toBe("policy");
    expect(classify(failure({ text: "frobnicator sneezed" }), tool(p)).source).toBe("default");
  });

  it("a rule's code must equal the failure's code or HTTP status", () => {
    const p = { defaults: { rules: [{ code: 418, action: "stop" }] } };
    expect(classify(failure({ httpStatus: 418 }), tool(p)).source).toBe("policy");
    expect(classify(failure({ code: 418 }), tool(p)).source).toBe("policy");
    expect(classify(failure({ httpStatus: 419 }), tool(p)).source).not.toBe("policy");
    expect(classify(failure({ code: 417 }), tool(p)).source).not.toBe("policy");
    expect(classify(failure({}), tool(p)).source).not.toBe("policy");
  });

  it("a rule's string code matches a Node code and a numeric code written as text", () => {
    const p = { defaults: { rules: [{ code: "ECONNRESET", action: "stop" }] } };
    expect(classify(failure({ code: "ECONNRESET" }), tool(p)).source).toBe("policy");
    expect(classify(failure({ code: "ECONNREFUSED" }), tool(p)).source).not.toBe("policy");
    const q = { defaults: { rules: [{ code: "-32099", action: "stop" }] } };
    expect(classify(failure({ code: -32099 }), tool(q)).source).toBe("policy");
    expect(classify(failure({ code: -32098 }), tool(q)).source).not.toBe("policy");
  });

  it("a rule with code and pattern needs both", () => {
    const p = { defaults: { rules: [{ code: 418, match: "teapot", action: "stop" }] } };
    expect(classify(failure({ httpStatus: 418, text: "I am a teapot" }), tool(p)).source).toBe(
      "policy",
    );
    expect(classify(failure({ httpStatus: 418, text: "a kettle" }), tool(p)).source).not.toBe(
      "policy",
    );
    expect(classify(failure({ httpStatus: 500, text: "I am a teapot" }), tool(p)).source).not.toBe(
      "policy",
    );
  });

  it("the first matching rule wins; rules that do not match are skipped", () => {
    const p = {
      defaults: {
        rules: [
          { match: "nothing-like-this", action: "host" },
          { match: "boom", action: "switch_tool" },
          { match: "boom", action: "stop" },
        ],
      },
    };
    expect(classify(failure(boom), tool(p)).action).toBe("switch_tool");
  });

  it.each<[Action, Reason]>([
    ["retry_dependency", "unavailable"],
    ["switch_tool", "not_supported"],
    ["stop", "business_rule"],
    ["host", "protocol_error"],
    ["correct_arguments", "invalid_argument"],
  ])(
    "a rule for %s without a reason reports %s when the detected action differs",
    (action, reason) => {
      // Detected: a lock held by someone else (business_rule via metadata) or, for a stop rule,
      // a rate limit (retry) so the actions differ.
      const detected = action === "stop" ? { class: "rate_limited" } : { class: "business_rule" };
      const p = { defaults: { rules: [{ match: "boom", action }] } };
      expect(classify(meta(detected, boom), tool(p))).toMatchObject({
        action,
        reason,
        source: "policy",
      });
    },
  );

  it("a rule for the detected action keeps the detected reason; a rule's own reason wins", () => {
    const same = { defaults: { rules: [{ match: "boom", action: "retry_dependency" }] } };
    expect(classify(meta({ class: "rate_limited" }, boom), tool(same)).reason).toBe("rate_limited");
    const own = {
      defaults: { rules: [{ match: "boom", action: "retry_dependency", reason: "timeout" }] },
    };
    expect(classify(meta({ class: "rate_limited" }, boom), tool(own)).reason).toBe("timeout");
  });

  it("a rule changes the action, never the certainty of the failure class", () => {
    const p = { defaults: { rules: [{ match: "boom", action: "correct_arguments" }] } };
    expect(classify(meta({ class: "timeout" }, boom), tool(p)).certainty).toBe("unknown");
  });

  it("a rule's hint travels with the classification, and no hint without one", () => {
    const p = { defaults: { rules: [{ match: "boom", action: "stop", hint: "Ask Ops" }] } };
    expect(classify(failure(boom), tool(p)).hint).toBe("Ask Ops");
    const q = { defaults: { rules: [{ match: "boom", action: "stop" }] } };
    expect(classify(failure(boom), tool(q))).not.toHaveProperty("hint");
  });

  it("a server's retry hint is kept, and absent when there is none", () => {
    expect(classify(failure({ retryAfterMs: 1_234 }), tool()).retryAfterMs).toBe(1_234);
    expect(classify(failure({ retryAfterMs: 0 }), tool()).retryAfterMs).toBe(0);
    expect(classify(failure({}), tool())).not.toHaveProperty("retryAfterMs");
    const p = { defaults: { rules: [{ match: "sneezed", action: "retry_dependency" }] } };
    expect(classify(failure({ retryAfterMs: 50 }), tool(p)).retryAfterMs).toBe(50);
  });
});

describe("classify: protocol errors", () => {
  it.each<[number, Certainty]>([
    [-32700, "failed"],
    [-32601, "failed"],
    [-32600, "failed"],
    [-32599, "unknown"],
    [-32099, "unknown"],
    [-32001, "unknown"],
    [-32000, "unknown"],
    [-32603, "unknown"],
  ])("code %i goes to the host with certainty %s", (code, certainty) => {
    expect(verdict(protocol(code))).toEqual({
      action: "host",
      reason: "protocol_error",
      certainty,
    });
  });

  it("-32001 about a session is an expired session, whatever the case", () => {
    expect(verdict(protocol(-32001, "SESSION not found"))).toEqual({
      action: "host",
      reason: "session_expired",
      certainty: "failed",
    });
    expect(verdict(protocol(-32000, "Session not found")).reason).toBe("protocol_error");
  });

  it("-32042 asks the host for the user's input", () => {
    expect(verdict(protocol(-32042, "URL elicitation required"))).toEqual({
      action: "host",
      reason: "elicitation_required",
      certainty: "failed",
    });
  });

  it("-32602 is bad arguments only for servers the policy says so of", () => {
    const old = { servers: { old: { invalidParamsAsArguments: true } } };
    expect(classify(protocol(-32602, "Invalid params"), tool(old, "t", "old"))).toMatchObject({
      action: "correct_arguments",
      reason: "invalid_argument",
      certainty: "failed",
    });
    expect(classify(protocol(-32600, "Invalid request"), tool(old, "t", "old")).action).toBe(
      "host",
    );
  });

  it("an unknown tool is switched, with certainty failed", () => {
    expect(verdict(protocol(-32602, "Unknown tool: nope"))).toEqual({
      action: "switch_tool",
      reason: "unknown_tool",
      certainty: "failed",
    });
  });
});

describe("classify: local failures", () => {
  it.each<[LocalKind, Action, Reason, Certainty]>([
    ["timeout", "retry_dependency", "timeout", "unknown"],
    ["aborted", "stop", "aborted", "unknown"],
    ["connection_closed", "retry_dependency", "connection_closed", "unknown"],
    ["connection_refused", "retry_dependency", "connection_refused", "not_sent"],
    ["not_connected", "host", "session_expired", "not_sent"],
    ["network", "retry_dependency", "network_error", "unknown"],
    ["http_status", "host", "transport_error", "unknown"],
    ["malformed_result", "host", "malformed_response", "unknown"],
    ["spawn_failed", "host", "transport_error", "not_sent"],
    ["thrown", "host", "transport_error", "unknown"],
  ])("%s is %s (%s, %s)", (local, action, reason, certainty) => {
    expect(verdict(failure({ channel: "local", origin: "local", local }))).toEqual({
      action,
      reason,
      certainty,
    });
  });

  const http = (httpStatus?: number) =>
    failure({
      channel: "local",
      origin: "local",
      local: "http_status",
      ...(httpStatus !== undefined && { httpStatus }),
    });

  it("an HTTP 404 from the transport is an expired session, never sent", () => {
    expect(verdict(http(404))).toEqual({
      action: "host",
      reason: "session_expired",
      certainty: "not_sent",
    });
  });

  it("an HTTP status the runtime can retry, or one that stops, is taken from the status", () => {
    expect(verdict(http(503)).action).toBe("retry_dependency");
    expect(verdict(http(504))).toMatchObject({ reason: "timeout", certainty: "unknown" });
    expect(verdict(http(401))).toMatchObject({ action: "stop", reason: "unauthorized" });
  });

  it("any other HTTP status from the transport goes to the host", () => {
    for (const status of [400, 405, 409, 422, 200]) {
      expect(verdict(http(status))).toEqual({
        action: "host",
        reason: "transport_error",
        certainty: "unknown",
      });
    }
    expect(verdict(http())).toMatchObject({ action: "host", reason: "transport_error" });
  });
});

describe("classify: a tool's structured status and system codes", () => {
  it("a text rule is reported as the step that decided", () => {
    expect(classify(failure({ text: "404 Not Found" }), tool()).source).toBe("rule");
  });

  it("a pattern-only rule does not need the failure to lack a code or a status", () => {
    const p = { defaults: { rules: [{ match: "sneezed", action: "stop" }] } };
    expect(classify(failure({ code: 7, httpStatus: 500 }), tool(p)).source).toBe("policy");
  });

  it("an HTTP status on a local failure of another kind does not make it an HTTP failure", () => {
    const f = failure({ channel: "local", origin: "local", local: "timeout", httpStatus: 404 });
    expect(verdict(f)).toEqual({
      action: "retry_dependency",
      reason: "timeout",
      certainty: "unknown",
    });
  });

  it("takes a tool's structured HTTP status when no metadata decides", () => {
    expect(classify(failure({ httpStatus: 404 }), tool())).toMatchObject({
      action: "correct_arguments",
      reason: "not_found",
      source: "signal",
    });
    expect(classify(failure({ httpStatus: 200 }), tool()).source).toBe("default");
  });

  it("reads a system error code only with the kind it was read as", () => {
    const sys = (code: string, local?: LocalKind) =>
      classify(failure({ code, ...(local !== undefined && { local }) }), tool());
    expect(sys("ECONNRESET", "connection_closed")).toMatchObject({
      action: "retry_dependency",
      reason: "connection_closed",
      certainty: "unknown",
      source: "signal",
    });
    expect(sys("ECONNRESET", "thrown").source).toBe("default");
    expect(sys("ECONNRESET").source).toBe("default");
    expect(sys("E1", "connection_closed").source).toBe("default");
    expect(sys("xECONNRESET", "connection_closed").source).toBe("default");
    expect(sys("ECONNRESETx", "connection_closed").source).toBe("default");
  });

  it("metadata decides before a structured status", () => {
    expect(classify(meta({ class: "conflict" }, { httpStatus: 503 }), tool()).reason).toBe(
      "conflict",
    );
  });
});
