/**
 * Governor's spans over MCP, through the real SDK client and a fault server over stdio: with the
 * latest semantic conventions opted in, each attempt is an MCP client span (`tools/call {tool}`)
 * under the call's `execute_tool` span.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { formatSpanTree, memoryTracing, spanTree } from "../examples/span-tree.ts";
import { type Endpoint, type Governed, governed, startEndpoint } from "./mcp-support.ts";

const { provider, exporter } = memoryTracing();
const tracer = provider.getTracer("mcp-tracing.test");

let endpoint: Endpoint;
let g: Governed;

beforeAll(async () => {
  endpoint = await startEndpoint("stdio", {
    scenario: { get_note: [{ kind: "status", status: 503 }] },
  });
  g = await governed(endpoint, {
    governorOptions: { tracing: { tracer, semconv: "latest" } },
  });
}, 60_000);

afterAll(async () => {
  await g.client.close();
  await endpoint.close();
});

afterEach(() => {
  exporter.reset();
});

it("a retried tool call over stdio: attempts are MCP client spans under execute_tool", async () => {
  const run = g.governor.startRun();
  const outcome = await g.governed.callTool(run, {
    name: "get_note",
    arguments: { id: "welcome" },
  });
  run.end();
  expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
  const text = formatSpanTree(spanTree(exporter.getFinishedSpans()));
  expect(text).toMatch(
    /^governor\.run {2}governor\.run\.reason=completed\n└─ execute_tool get_note {2}governor\.outcome=ok governor\.attempts=2 .*\n {3}├─ tools\/call get_note ERROR {2}governor\.attempt=1 governor\.action=retry_dependency governor\.reason=unavailable .*error\.type=tool_error mcp\.method\.name=tools\/call\n {3}└─ tools\/call get_note {2}governor\.attempt=2 mcp\.method\.name=tools\/call$/,
  );
  const attempts = exporter.getFinishedSpans().filter((s) => s.name === "tools/call get_note");
  expect(attempts.map((s) => s.kind)).toEqual([2, 2]);
  expect(attempts[0]?.attributes).toMatchObject({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "get_note",
  });
});

it("a tool the server does not have, answered with isError: the attempt's error.type is tool_error", async () => {
  const run = g.governor.startRun();
  const outcome = await g.governed.callTool(run, { name: "no_such_tool", arguments: {} });
  run.end();
  expect(outcome).toMatchObject({ kind: "model", action: "switch_tool", reason: "unknown_tool" });
  const spans = exporter.getFinishedSpans();
  const attempt = spans.find((s) => s.name === "tools/call no_such_tool");
  expect(attempt?.attributes).toMatchObject({
    "error.type": "tool_error",
    "governor.action": "switch_tool",
    "governor.reason": "unknown_tool",
  });
  expect(attempt?.attributes["rpc.response.status_code"]).toBeUndefined();
  expect(spans.find((s) => s.name === "execute_tool no_such_tool")?.attributes["error.type"]).toBe(
    "unknown_tool",
  );
});
