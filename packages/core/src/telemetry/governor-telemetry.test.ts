import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { describe, expect, it } from "vitest";
import { createGovernor } from "../run/governor.ts";
import { createJsonlSink, parseEvents } from "./event-log.ts";
import { summarizeEvents } from "./event-report.ts";
import type { GovernorEvent } from "./events.ts";

const failing = async () => ({
  content: [{ type: "text", text: "Permission denied" }],
  isError: true,
});
const ok = async () => ({ content: [{ type: "text", text: "fine" }] });

describe("a governed run's telemetry", () => {
  it("lands in OpenTelemetry metrics", async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    const governor = createGovernor(
      { tools: { read: { effect: "read_only" }, rm: { effect: "mutating" } } },
      { meter: provider.getMeter("test") },
    );
    const run = governor.startRun();
    await run.call({ tool: "read", server: "s" }, ok);
    await run.call({ tool: "rm", server: "s" }, failing);
    await reader.forceFlush();
    const metrics = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const points = (name: string) =>
      metrics.find((m) => m.descriptor.name === name)?.dataPoints ?? [];
    expect(points("governor.tool.calls").map((p) => [p.attributes, p.value])).toEqual([
      [{ tool: "read", server: "s", outcome: "ok" }, 1],
      [{ tool: "rm", server: "s", outcome: "stop" }, 1],
    ]);
    expect(points("governor.tool.failures").map((p) => p.attributes)).toEqual([
      { tool: "rm", action: "stop", reason: "forbidden" },
    ]);
    expect(points("governor.runs.stopped").map((p) => [p.attributes, p.value])).toEqual([
      [{ reason: "forbidden" }, 1],
    ]);
    expect(points("governor.run.duration")).toHaveLength(1);
    await provider.shutdown();
  });

  it("writes versioned JSON Lines that governor report reads back", async () => {
    const dir = await mkdtemp(join(tmpdir(), "governor-events-"));
    const file = join(dir, "events.jsonl");
    const sink = createJsonlSink(file);
    const governor = createGovernor(
      { tools: { rm: { effect: "mutating" } } },
      { onEvent: sink.write, metrics: false },
    );
    const run = governor.startRun({ runId: "r1" });
    await run.call({ tool: "rm" }, failing);
    await sink.close();
    const { events, errors } = parseEvents(await readFile(file, "utf8"));
    expect(errors).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(["decision", "call", "run_end"]);
    expect(events.every((e) => e.v === 1)).toBe(true);
    const report = summarizeEvents(events);
    expect(report.stoppedBy).toEqual({ forbidden: 1 });
    await rm(dir, { recursive: true });
  });

  it("issue 9.6: 2,500 invented tool names do not push real tools into the overflow series", async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    const governor = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { meter: provider.getMeter("test"), knownTools: ["list_notes"] },
    );
    const unknownTool = async (ctx: { args: Readonly<Record<string, unknown>> }) => ({
      content: [
        { type: "text", text: `MCP error -32602: Tool ${String(ctx.args.name)} not found` },
      ],
      isError: true,
    });
    for (let i = 0; i < 2_500; i += 1) {
      const name = `invented_tool_${i}`;
      await governor.startRun().call({ tool: name, args: { name } }, unknownTool);
    }
    const run = governor.startRun();
    for (let i = 0; i < 3; i += 1) await run.call({ tool: "get_note", args: { i } }, ok);
    await governor.startRun().call({ tool: "list_notes" }, failing);
    // A tool nobody declared becomes an attribute once a call of it succeeded (it exists).
    await governor.startRun().call({ tool: "search_notes" }, failing);
    await run.call({ tool: "search_notes", args: { q: 1 } }, ok);
    await run.call({ tool: "search_notes", args: { q: 2 } }, ok);
    await reader.forceFlush();
    const metrics = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const points = (name: string) =>
      (metrics.find((m) => m.descriptor.name === name)?.dataPoints ?? []).map((p) => [
        p.attributes,
        p.value,
      ]);
    const calls = points("governor.tool.calls");
    expect(JSON.stringify(calls)).not.toContain("otel.metric.overflow");
    expect(JSON.stringify(calls)).not.toContain("invented_tool");
    expect(calls).toEqual(
      expect.arrayContaining([
        [{ tool: "get_note", outcome: "ok" }, 3],
        [{ tool: "list_notes", outcome: "stop" }, 1],
        [{ tool: "search_notes", outcome: "ok" }, 2],
        [{ tool: "(unknown)", outcome: "model" }, 2_500],
        // Its failure before that first success.
        [{ tool: "(unknown)", outcome: "stop" }, 1],
      ]),
    );
    expect(calls.length).toBeLessThan(10);
    const failures = points("governor.tool.failures");
    expect(JSON.stringify(failures)).not.toContain("otel.metric.overflow");
    expect(failures.length).toBeLessThan(10);
    await provider.shutdown();
  }, 60_000);

  it("issue 9.6: a 100 KB tool name with a secret is capped and redacted in events, lines and labels", async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    const provider = new MeterProvider({ readers: [reader] });
    const lines: string[] = [];
    const sink = createJsonlSink({ write: (line: string) => lines.push(line) });
    const seen: GovernorEvent[] = [];
    const governor = createGovernor(
      {},
      {
        meter: provider.getMeter("test"),
        onEvent: (event) => {
          seen.push(event);
          sink.write(event);
        },
      },
    );
    const secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    const name = `${secret}_${"a".repeat(100_000)}`;
    const run = governor.startRun();
    await run.call({ tool: name, server: `srv_${"b".repeat(5_000)}` }, failing);
    run.end();
    await sink.close();
    await reader.forceFlush();

    expect(seen.length).toBeGreaterThan(0);
    for (const event of seen) {
      const tools = [
        "tool" in event ? event.tool : undefined,
        "server" in event ? event.server : undefined,
        event.type === "run_end" ? event.summary.lastFailure?.tool : undefined,
      ].filter((t) => t !== undefined);
      for (const t of tools) expect(t.length).toBeLessThanOrEqual(128);
    }
    expect(JSON.stringify(seen)).not.toContain(secret);
    expect(lines.length).toBe(seen.length);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(16_384);
    expect(lines.join("")).not.toContain(secret);
    expect(parseEvents(lines.join("")).errors).toEqual([]);
    const labels = JSON.stringify(
      exporter
        .getMetrics()
        .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.dataPoints))),
    );
    expect(labels).not.toContain(secret);
    expect(labels).not.toContain("aaaaaaaaaa");
    await provider.shutdown();
  });
});
