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
import { createJsonlSink, parseEvents } from "./event-log.ts";
import { summarizeEvents } from "./event-report.ts";
import { createGovernor } from "./governor.ts";

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
});
