/**
 * Governor's spans through the real OpenTelemetry SDK (sdk-trace-base, an in-memory exporter, the
 * async-hooks context manager): what each decision looks like in a trace, where the spans nest.
 */
import { createGovernor, type GovernorOptions, HostError, type PolicyInput } from "@governor/core";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import {
  formatSpanTree,
  memoryTracing,
  registerGlobally,
  spanTree,
} from "../examples/span-tree.ts";
import { latestSemconvFromEnv } from "../packages/core/src/telemetry/tracing.ts";

const { provider, exporter } = memoryTracing();
const tracer = provider.getTracer("test");

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const failed = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });

const POLICY: PolicyInput = {
  defaults: { retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } },
  tools: {
    get_note: { effect: "read_only" },
    search: { effect: "read_only", alternatives: ["search_backup"] },
  },
};

function governor(policy: PolicyInput = POLICY, options: GovernorOptions = {}) {
  return createGovernor(policy, { metrics: false, tracing: { tracer }, ...options });
}

function tree(): string {
  return formatSpanTree(spanTree(exporter.getFinishedSpans()));
}

function named(name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === name);
}

afterEach(() => {
  exporter.reset();
});

describe("a span per call, one per attempt, under the run", () => {
  it("a success: the run, its call, one attempt", async () => {
    const run = governor().startRun({ runId: "r-ok" });
    await run.call({ tool: "get_note", args: { id: "a" }, callId: "call_1" }, async () => ok("hi"));
    run.end();
    expect(tree()).toBe(
      [
        "governor.run  governor.run.reason=completed",
        "└─ execute_tool get_note  gen_ai.tool.call.id=call_1 governor.outcome=ok governor.attempts=1 governor.idempotency_key.present=false",
        "   └─ governor.attempt get_note  governor.attempt=1",
      ].join("\n"),
    );
    const [call] = named("execute_tool get_note");
    expect(call?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "get_note",
      "governor.run.id": "r-ok",
      "governor.budget.calls": 1,
      "governor.budget.failures": 0,
    });
    expect(call?.kind).toBe(0);
    expect(call?.attributes["error.type"]).toBeUndefined();
  });

  it("a retried failure: the failed attempt says what was decided and why, the retry succeeds", async () => {
    const run = governor().startRun();
    let n = 0;
    const outcome = await run.call({ tool: "get_note" }, async () =>
      ++n === 1 ? failed("503 Service Unavailable") : ok("hi"),
    );
    run.end();
    expect(outcome.kind).toBe("ok");
    const text = tree();
    expect(text).toMatch(
      /├─ governor\.attempt get_note ERROR {2}governor\.attempt=1 governor\.action=retry_dependency governor\.reason=unavailable governor\.certainty=\w+ governor\.delay_ms=\d+ governor\.idempotency_key\.present=false error\.type=unavailable\n/,
    );
    expect(text).toContain("└─ governor.attempt get_note  governor.attempt=2");
    expect(text).toContain("execute_tool get_note  governor.outcome=ok governor.attempts=2");
    const [first] = named("governor.attempt get_note").filter(
      (s) => s.attributes["governor.attempt"] === 1,
    );
    // The attempt's span ends with its decision, before the backoff and the retry.
    const second = named("governor.attempt get_note").find(
      (s) => s.attributes["governor.attempt"] === 2,
    );
    expect(first && second).toBeTruthy();
    const end = (s: ReadableSpan) => s.endTime[0] * 1e9 + s.endTime[1];
    const start = (s: ReadableSpan) => s.startTime[0] * 1e9 + s.startTime[1];
    expect(end(first as ReadableSpan)).toBeLessThanOrEqual(start(second as ReadableSpan));
    expect(first?.status).toEqual({ code: 2, message: "unavailable" });
  });

  it("a correction: the call ends with the model told to fix its arguments", async () => {
    const run = governor().startRun();
    const outcome = await run.call({ tool: "get_note", args: { id: "x" } }, async () =>
      failed('No note with id "x". Known ids: welcome'),
    );
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
    run.end();
    const [call] = named("execute_tool get_note");
    expect(call?.attributes).toMatchObject({
      "governor.outcome": "model",
      "governor.action": "correct_arguments",
      "governor.reason": "not_found",
      "error.type": "not_found",
    });
    expect(call?.status.code).toBe(2);
  });

  it("a switch: three failed attempts, the last one switching to the alternative", async () => {
    const run = governor().startRun();
    const outcome = await run.call({ tool: "search" }, async () =>
      failed("503 Service Unavailable"),
    );
    expect(outcome).toMatchObject({ kind: "model", action: "switch_tool" });
    run.end();
    const attempts = named("governor.attempt search")
      .map((s) => [s.attributes["governor.attempt"], s.attributes["governor.action"]])
      .sort();
    expect(attempts).toEqual([
      [1, "retry_dependency"],
      [2, "retry_dependency"],
      [3, "switch_tool"],
    ]);
    expect(named("execute_tool search")[0]?.attributes).toMatchObject({
      "governor.outcome": "model",
      "governor.action": "switch_tool",
      "governor.attempts": 3,
      "governor.budget.retries": 2,
    });
  });

  it("a stop before any attempt: the call says which budget, the run span says why it ended", async () => {
    const run = governor({ ...POLICY, budgets: { calls: 1 } }).startRun();
    await run.call({ tool: "get_note" }, async () => ok("one"));
    const outcome = await run.call({ tool: "get_note" }, async () => ok("two"));
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    const calls = named("execute_tool get_note");
    const stopped = calls.find((s) => s.attributes["governor.outcome"] === "stop");
    expect(stopped?.attributes).toMatchObject({
      "governor.action": "stop",
      "governor.reason": "budget_exhausted",
      "governor.attempts": 0,
      "error.type": "budget_exhausted",
    });
    // Refused before any attempt: no attempt span under it.
    const children = exporter
      .getFinishedSpans()
      .filter((s) => s.parentSpanContext?.spanId === stopped?.spanContext().spanId);
    expect(children).toEqual([]);
    const [runSpan] = named("governor.run");
    expect(runSpan?.attributes).toMatchObject({
      "governor.run.reason": "budget_exhausted",
      "governor.budget": "calls",
      "governor.run.calls": 1,
    });
    expect(runSpan?.status).toEqual({ code: 2, message: "budget_exhausted" });
  });

  it("a host error: the call's span fails with the reason; the raw message never reaches it", async () => {
    const run = governor().startRun();
    const err = Object.assign(new Error("MCP error -32601: Method not found /srv/app/secret.ts"), {
      code: -32601,
    });
    await expect(run.call({ tool: "get_note" }, async () => Promise.reject(err))).rejects.toThrow(
      HostError,
    );
    const [call] = named("execute_tool get_note");
    expect(call?.attributes).toMatchObject({
      "governor.outcome": "host",
      "governor.action": "host",
      "governor.reason": "protocol_error",
      "error.type": "protocol_error",
    });
    expect(call?.status).toEqual({ code: 2, message: "protocol_error" });
    const everything = JSON.stringify(
      exporter.getFinishedSpans().map((s) => [s.attributes, s.status, s.events]),
    );
    expect(everything).not.toContain("Method not found");
    expect(everything).not.toContain("secret.ts");
  });
});

describe("where the spans nest", () => {
  it("under the host's active span, with no run span of Governor's own", async () => {
    const gov = governor();
    await tracer.startActiveSpan("host.agent", async (host) => {
      const run = gov.startRun();
      await run.call({ tool: "get_note" }, async () => ok("hi"));
      run.end();
      host.end();
    });
    expect(tree()).toBe(
      [
        "host.agent",
        "└─ execute_tool get_note  governor.outcome=ok governor.attempts=1 governor.idempotency_key.present=false",
        "   └─ governor.attempt get_note  governor.attempt=1",
      ].join("\n"),
    );
  });

  it("the tool's own spans sit under the attempt that ran them", async () => {
    const run = governor().startRun();
    let n = 0;
    await run.call({ tool: "get_note" }, async () => {
      n += 1;
      tracer.startSpan(`db.query ${n}`).end();
      return n === 1 ? failed("503 Service Unavailable") : ok("hi");
    });
    run.end();
    const text = tree();
    expect(text).toMatch(
      /governor\.attempt get_note ERROR {2}governor\.attempt=1.*\n {3}│ {2}└─ db\.query 1\n/,
    );
    expect(text).toMatch(
      /└─ governor\.attempt get_note {2}governor\.attempt=2\n {6}└─ db\.query 2$/,
    );
  });

  it("through the global provider: nothing before an SDK is registered, spans after", async () => {
    const gov = createGovernor(POLICY, { metrics: false });
    const before = gov.startRun();
    await before.call({ tool: "get_note" }, async () => ok("hi"));
    before.end();
    expect(exporter.getFinishedSpans()).toEqual([]);
    registerGlobally(provider);
    const after = gov.startRun();
    await after.call({ tool: "get_note" }, async () => ok("hi"));
    after.end();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([
      "governor.attempt get_note",
      "execute_tool get_note",
      "governor.run",
    ]);
  });

  it("records nothing with tracing: false", async () => {
    const run = createGovernor(POLICY, { metrics: false, tracing: false }).startRun();
    await run.call({ tool: "get_note" }, async () => ok("hi"));
    run.end();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe("what may reach a span", () => {
  it("the failure text only when errorText is on, and then redacted", async () => {
    const secret = "/srv/notes/private-dir/x.md";
    const call = async (errorText: boolean) => {
      const run = governor(POLICY, { tracing: { tracer, errorText } }).startRun();
      await run.call({ tool: "get_note" }, async () => failed(`No note with id "x" in ${secret}`));
      run.end();
      const [span] = named("execute_tool get_note");
      exporter.reset();
      return span;
    };
    const off = await call(false);
    expect(off?.status).toEqual({ code: 2, message: "not_found" });
    const on = await call(true);
    expect(on?.status.message).toContain('No note with id "x"');
    expect(on?.status.message).not.toContain(secret);
  });

  it("names are capped and redacted as in the events", async () => {
    const long = `tool_${"x".repeat(300)}`;
    const run = governor().startRun();
    await run.call({ tool: long }, async () => ok("hi"));
    run.end();
    const [call] = exporter.getFinishedSpans().filter((s) => s.name.startsWith("execute_tool"));
    expect(String(call?.attributes["gen_ai.tool.name"]).length).toBeLessThanOrEqual(128);
    expect(call?.name.length).toBeLessThanOrEqual(128 + "execute_tool ".length);
  });
});

describe("semantic conventions", () => {
  it("reads OTEL_SEMCONV_STABILITY_OPT_IN as a comma-separated list", () => {
    expect(latestSemconvFromEnv(undefined)).toBe(false);
    expect(latestSemconvFromEnv("http")).toBe(false);
    expect(latestSemconvFromEnv("http, gen_ai_latest_experimental")).toBe(true);
    expect(latestSemconvFromEnv("gen_ai_latest_experimental_x")).toBe(false);
  });

  it("latest: an attempt sent to an MCP server is an MCP client span", async () => {
    const run = governor(POLICY, { tracing: { tracer, semconv: "latest" } }).startRun();
    await run.call({ tool: "get_note", server: "notes" }, async () =>
      failed('No note with id "x". Known ids: welcome'),
    );
    run.end();
    const [attempt] = named("tools/call get_note");
    expect(attempt?.kind).toBe(2);
    expect(attempt?.attributes).toMatchObject({
      "mcp.method.name": "tools/call",
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "get_note",
      "error.type": "tool_error",
      "governor.reason": "not_found",
    });
    expect(named("execute_tool get_note")[0]?.attributes["governor.server"]).toBe("notes");
  });

  it("latest: a JSON-RPC error from the server is the attempt's error.type and rpc.response.status_code", async () => {
    const run = governor(POLICY, {
      tracing: { tracer, semconv: "latest" },
      onHostError: () => ({ action: "stop" }),
    }).startRun();
    await run.call({ tool: "get_note", server: "notes" }, async () =>
      Promise.reject(
        Object.assign(new Error("MCP error -32603: Internal error"), { code: -32603 }),
      ),
    );
    run.end();
    const [attempt] = named("tools/call get_note");
    expect(attempt?.attributes).toMatchObject({
      "error.type": "-32603",
      "rpc.response.status_code": "-32603",
      "governor.action": "host",
    });
  });

  it("baseline: the same attempt is Governor's own span, no MCP attributes", async () => {
    const run = governor(POLICY, { tracing: { tracer, semconv: "baseline" } }).startRun();
    await run.call({ tool: "get_note", server: "notes" }, async () =>
      failed('No note with id "x". Known ids: welcome'),
    );
    run.end();
    const [attempt] = named("governor.attempt get_note");
    expect(attempt?.kind).toBe(0);
    expect(attempt?.attributes["mcp.method.name"]).toBeUndefined();
    expect(attempt?.attributes["error.type"]).toBe("not_found");
  });
});
