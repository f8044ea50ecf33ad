/**
 * Governor's spans under the AI SDK's own (`experimental_telemetry`), through the real SDKs: the
 * AI SDK's `generateText` with a scripted model, `governTools`, and one OpenTelemetry provider
 * exporting into memory. Each tool call's `ai.toolCall` span holds Governor's `execute_tool` span,
 * which holds one span per attempt saying what Governor decided and why.
 */
import { governTools } from "@governor/ai-sdk";
import { createGovernor, type HostError } from "@governor/core";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { expect, it } from "vitest";
import { z } from "zod";
import { formatSpanTree, memoryTracing, type SpanNode, spanTree } from "../examples/span-tree.ts";
import { callTool as call, type Step, say } from "../packages/ai-sdk/src/test-support/sdks.ts";

const { provider, exporter } = memoryTracing();
const tracer = provider.getTracer("ai-sdk-tracing.test");

function scripted(steps: Step[]) {
  let next = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const step = steps[next++];
      if (step === undefined) throw new Error("the script ran out");
      return step;
    },
  });
}

const FAST = { baseDelayMs: 1, maxDelayMs: 2 };

function tools() {
  let fetches = 0;
  return {
    get_note: tool({
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }) => {
        if (id !== "welcome") throw new Error(`No note with id "${id}". Known ids: welcome`);
        return { id, body: "hello" };
      },
    }),
    fetch_page: tool({
      inputSchema: z.object({ url: z.string() }),
      execute: async ({ url }) => {
        fetches += 1;
        if (fetches === 1) throw new Error("503 Service Unavailable");
        return { url, status: 200 };
      },
    }),
    search: tool({
      inputSchema: z.object({ q: z.string() }),
      execute: async (): Promise<string> => {
        throw new Error("503 Service Unavailable");
      },
    }),
    delete_account: tool({
      inputSchema: z.object({ id: z.string() }),
      execute: async (): Promise<string> => {
        throw new Error("Permission denied: the API token lacks the accounts:delete scope");
      },
    }),
    query_db: tool({
      inputSchema: z.object({ sql: z.string() }),
      execute: async (): Promise<string> => {
        throw Object.assign(new Error("Internal error at db-7.internal"), { code: -32603 });
      },
    }),
  };
}

const governor = createGovernor(
  {
    defaults: { retry: { attempts: 2, ...FAST } },
    tools: {
      get_note: { effect: "read_only" },
      fetch_page: { effect: "read_only" },
      search: { effect: "read_only", alternatives: ["search_backup"] },
      delete_account: { effect: "mutating" },
      query_db: { effect: "read_only" },
    },
  },
  { metrics: false, tracing: { tracer } },
);

/** One agent loop with the AI SDK's telemetry on; the trees of every span it made. */
async function loop(steps: Step[]): Promise<SpanNode[]> {
  exporter.reset();
  const run = governor.startRun();
  const hostErrors: HostError[] = [];
  await generateText({
    model: scripted(steps),
    tools: governTools(tools(), { run, onHostError: (e) => hostErrors.push(e) }),
    stopWhen: stepCountIs(steps.length),
    prompt: "do the task",
    experimental_telemetry: { isEnabled: true, tracer, functionId: "agent" },
  });
  run.end();
  return spanTree(exporter.getFinishedSpans());
}

function find(nodes: readonly SpanNode[], name: string): SpanNode[] {
  const out: SpanNode[] = [];
  const walk = (n: SpanNode) => {
    if (n.span.name === name) out.push(n);
    n.children.forEach(walk);
  };
  nodes.forEach(walk);
  return out;
}

function governorChild(toolCall: SpanNode, toolName: string): ReadableSpan {
  const [child] = toolCall.children.filter((c) => c.span.name === `execute_tool ${toolName}`);
  if (child === undefined)
    throw new Error(`no execute_tool ${toolName} under ${toolCall.span.name}`);
  return child.span;
}

it("each ai.toolCall holds Governor's execute_tool span, its attempts and decisions", async () => {
  const roots = await loop([
    call("fetch_page", { url: "https://example.com" }, "call_fetch"),
    call("get_note", { id: "drafts" }, "call_note"),
    call("search", { q: "x" }, "call_search"),
    call("delete_account", { id: "u1" }, "call_delete"),
    say("done"),
  ]);
  // One trace: the AI SDK's generateText at the root, no Governor run span (the host has one).
  expect(roots.map((r) => r.span.name)).toEqual(["ai.generateText"]);
  expect(find(roots, "governor.run")).toEqual([]);
  const toolCalls = find(roots, "ai.toolCall");
  const byId = new Map(toolCalls.map((n) => [n.span.attributes["ai.toolCall.id"], n]));

  // A retried failure, then a success.
  const fetch = byId.get("call_fetch");
  expect(fetch).toBeDefined();
  const fetchSpan = governorChild(fetch as SpanNode, "fetch_page");
  expect(fetchSpan.attributes).toMatchObject({
    "gen_ai.tool.call.id": "call_fetch",
    "governor.outcome": "ok",
    "governor.attempts": 2,
  });
  // A correction.
  expect(governorChild(byId.get("call_note") as SpanNode, "get_note").attributes).toMatchObject({
    "governor.action": "correct_arguments",
    "governor.reason": "not_found",
    "error.type": "not_found",
  });
  // A switch after the retries.
  expect(governorChild(byId.get("call_search") as SpanNode, "search").attributes).toMatchObject({
    "governor.action": "switch_tool",
    "governor.outcome": "model",
  });
  // A stop.
  expect(
    governorChild(byId.get("call_delete") as SpanNode, "delete_account").attributes,
  ).toMatchObject({
    "governor.outcome": "stop",
    "governor.action": "stop",
    "governor.reason": "forbidden",
    "error.type": "forbidden",
  });
  const text = formatSpanTree(roots);
  expect(text).toMatch(
    /├─ ai\.toolCall\n│ {2}└─ execute_tool fetch_page {2}gen_ai\.tool\.call\.id=call_fetch governor\.outcome=ok governor\.attempts=2.*\n│ {5}├─ governor\.attempt fetch_page ERROR {2}governor\.attempt=1 governor\.action=retry_dependency governor\.reason=unavailable/,
  );
});

it("a host error sits under its ai.toolCall, failed with the reason", async () => {
  const roots = await loop([call("query_db", { sql: "select 1" }, "call_db"), say("done")]);
  const [toolCall] = find(roots, "ai.toolCall");
  const span = governorChild(toolCall as SpanNode, "query_db");
  expect(span.attributes).toMatchObject({
    "gen_ai.tool.call.id": "call_db",
    "governor.outcome": "host",
    "governor.reason": "protocol_error",
    "error.type": "protocol_error",
  });
  expect(span.status).toEqual({ code: 2, message: "protocol_error" });
});

it("prints the loop's trace (docs/telemetry.md shows this tree)", async () => {
  const roots = await loop([
    call("fetch_page", { url: "https://example.com" }, "call_fetch"),
    call("get_note", { id: "drafts" }, "call_note"),
    call("delete_account", { id: "u1" }, "call_delete"),
    say("done"),
  ]);
  const text = formatSpanTree(roots);
  if (process.env.PRINT_TRACE) process.stdout.write(`${text}\n`);
  expect(text.split("\n")[0]).toBe("ai.generateText");
  expect(text).toContain("execute_tool delete_account ERROR");
});
