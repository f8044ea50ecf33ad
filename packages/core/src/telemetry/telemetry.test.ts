import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { metrics } from "@opentelemetry/api";
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { afterEach, describe, expect, it } from "vitest";
import { createGovernor } from "../run/governor.ts";
import { createJsonlSink, parseEvents } from "./event-log.ts";
import {
  OTHER_TOOLS,
  REPORT_LIMITS,
  summarizeEventLines,
  summarizeEvents,
} from "./event-report.ts";
import { eventSchema } from "./event-schema.ts";
import type { CallEvent, DecisionEvent, GovernorEvent, RunEndEvent, RunSummary } from "./events.ts";
import { createOtelRecorder, type MeterLike } from "./telemetry.ts";

/** A decision event with test defaults. */
function decisionEvent(fields: Partial<DecisionEvent> = {}): DecisionEvent {
  return {
    v: 1,
    type: "decision",
    at: 1_700_000_000_000,
    runId: "run-1",
    tool: "search",
    attempt: 1,
    action: "correct_arguments",
    reason: "invalid_argument",
    certainty: "failed",
    fingerprint: "0123456789abcdef",
    observed: false,
    ...fields,
  };
}

/** A call event with test defaults. */
function callEvent(fields: Partial<CallEvent> = {}): CallEvent {
  return {
    v: 1,
    type: "call",
    at: 1_700_000_000_000,
    runId: "run-1",
    tool: "search",
    outcome: "ok",
    attempts: 1,
    durationMs: 12,
    ...fields,
  };
}

/** A run-end event with test defaults. */
function runEndEvent(
  fields: Partial<Omit<RunEndEvent, "summary">> = {},
  summary: Partial<RunSummary> = {},
): RunEndEvent {
  const runId = fields.runId ?? "run-1";
  return {
    v: 1,
    type: "run_end",
    at: 1_700_000_001_000,
    runId,
    ...fields,
    summary: {
      runId,
      reason: "completed",
      personResolvable: false,
      calls: 1,
      attempts: 1,
      actions: { correct_arguments: 0, retry_dependency: 0, switch_tool: 0, stop: 0, host: 0 },
      retries: 0,
      failures: 0,
      fingerprints: {},
      durationMs: 1_000,
      observeOnly: false,
      ...summary,
    },
  };
}

/**
 * A small log of two runs: run-1 retries `search` on `web` twice then succeeds, then gets an
 * argument correction and ends `completed`; run-2 calls `pay` (no server) which fails with the
 * same fingerprint until `repeated_failure`, then a budget stop is recorded for run-3.
 */
function sampleLog(): GovernorEvent[] {
  const timeout = "aaaaaaaaaaaaaaaa";
  const badArg = "bbbbbbbbbbbbbbbb";
  const declined = "cccccccccccccccc";
  return [
    decisionEvent({
      server: "web",
      attempt: 1,
      action: "retry_dependency",
      reason: "timeout",
      certainty: "unknown",
      fingerprint: timeout,
      delayMs: 120,
    }),
    decisionEvent({
      at: 1_700_000_000_200,
      server: "web",
      attempt: 2,
      action: "retry_dependency",
      reason: "timeout",
      certainty: "unknown",
      fingerprint: timeout,
      delayMs: 250,
    }),
    callEvent({ at: 1_700_000_000_500, server: "web", outcome: "ok", attempts: 3 }),
    decisionEvent({ at: 1_700_000_000_600, server: "web", fingerprint: badArg }),
    callEvent({ at: 1_700_000_000_600, server: "web", outcome: "model" }),
    runEndEvent({}, { calls: 2, attempts: 4, retries: 2, failures: 3, durationMs: 1_000 }),
    decisionEvent({
      runId: "run-2",
      tool: "pay",
      reason: "business_rule",
      action: "stop",
      fingerprint: declined,
    }),
    callEvent({ runId: "run-2", tool: "pay", outcome: "model" }),
    decisionEvent({
      runId: "run-2",
      tool: "pay",
      action: "stop",
      reason: "repeated_failure",
      cause: "business_rule",
      fingerprint: declined,
    }),
    callEvent({ runId: "run-2", tool: "pay", outcome: "stop" }),
    runEndEvent({ runId: "run-2" }, { reason: "repeated_failure", durationMs: 40_000 }),
    runEndEvent({ runId: "run-3" }, { reason: "budget_exhausted", budget: "calls", durationMs: 5 }),
    callEvent({ runId: "run-4", tool: "search", outcome: "replayed" }),
  ];
}

interface Point {
  readonly attributes: Record<string, unknown>;
  readonly value: unknown;
}

/** An SDK meter provider with an in-memory exporter, read on demand. */
function sdk() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const collect = async (): Promise<Map<string, MetricData>> => {
    await reader.forceFlush();
    const last = exporter.getMetrics().at(-1);
    const found = new Map<string, MetricData>();
    for (const scope of last?.scopeMetrics ?? []) {
      for (const metric of scope.metrics) found.set(metric.descriptor.name, metric);
    }
    exporter.reset();
    return found;
  };
  return { provider, exporter, reader, collect };
}

/** Points in a fixed order: by their attributes, key order ignored. */
function sorted(list: Point[]): Point[] {
  const key = (p: Point) => JSON.stringify(Object.entries(p.attributes).sort());
  return [...list].sort((a, b) => key(a).localeCompare(key(b)));
}

function points(metric: MetricData | undefined): Point[] {
  if (metric === undefined) return [];
  return sorted(
    metric.dataPoints.map((p) => ({ attributes: { ...p.attributes }, value: p.value })),
  );
}

describe("createOtelRecorder", () => {
  afterEach(() => metrics.disable());

  it("records every instrument with its attributes from an event sequence", async () => {
    const { provider, collect } = sdk();
    // An SDK meter satisfies the structural MeterLike: core needs no OpenTelemetry types.
    const meter: MeterLike = provider.getMeter("test");
    const record = createOtelRecorder({ meter, knownTools: ["search", "pay"] });
    for (const event of sampleLog()) record(event);
    const found = await collect();

    expect([...found.keys()].sort()).toEqual([
      "governor.retries",
      "governor.run.duration",
      "governor.runs.stopped",
      "governor.tool.calls",
      "governor.tool.failures",
    ]);

    const calls = found.get("governor.tool.calls");
    expect(calls?.dataPointType).toBe(DataPointType.SUM);
    expect(calls?.descriptor.unit).toBe("{call}");
    expect(points(calls)).toEqual(
      sorted([
        { attributes: { tool: "search", server: "web", outcome: "ok" }, value: 1 },
        { attributes: { tool: "search", server: "web", outcome: "model" }, value: 1 },
        { attributes: { tool: "pay", outcome: "model" }, value: 1 },
        { attributes: { tool: "pay", outcome: "stop" }, value: 1 },
        { attributes: { tool: "search", outcome: "replayed" }, value: 1 },
      ]),
    );

    expect(points(found.get("governor.tool.failures"))).toEqual(
      sorted([
        { attributes: { tool: "search", action: "retry_dependency", reason: "timeout" }, value: 2 },
        {
          attributes: { tool: "search", action: "correct_arguments", reason: "invalid_argument" },
          value: 1,
        },
        { attributes: { tool: "pay", action: "stop", reason: "business_rule" }, value: 1 },
        { attributes: { tool: "pay", action: "stop", reason: "repeated_failure" }, value: 1 },
      ]),
    );

    expect(points(found.get("governor.retries"))).toEqual([
      { attributes: { tool: "search", server: "web", reason: "timeout" }, value: 2 },
    ]);

    expect(points(found.get("governor.runs.stopped"))).toEqual(
      sorted([
        { attributes: { reason: "completed" }, value: 1 },
        { attributes: { reason: "repeated_failure" }, value: 1 },
        { attributes: { reason: "budget_exhausted", budget: "calls" }, value: 1 },
      ]),
    );

    const duration = found.get("governor.run.duration");
    expect(duration?.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(duration?.descriptor.unit).toBe("ms");
    const histogram = points(duration).map((p) => ({
      attributes: p.attributes,
      count: (p.value as { count: number }).count,
      sum: (p.value as { sum: number }).sum,
    }));
    expect(histogram).toEqual([
      { attributes: { reason: "budget_exhausted" }, count: 1, sum: 5 },
      { attributes: { reason: "completed" }, count: 1, sum: 1_000 },
      { attributes: { reason: "repeated_failure" }, count: 1, sum: 40_000 },
    ]);
    // Runs last minutes: the advised boundaries reach past the SDK's default 10 s.
    const first = points(duration)[0]?.value as { buckets: { boundaries: number[] } } | undefined;
    expect(first?.buckets.boundaries.at(-1)).toBeGreaterThanOrEqual(600_000);
    await provider.shutdown();
  });

  it("uses the global meter provider, even one registered after the recorder was made", async () => {
    const record = createOtelRecorder();
    // No SDK yet: the API's no-op meter takes the event.
    record(callEvent());
    const { provider, collect } = sdk();
    metrics.setGlobalMeterProvider(provider);
    record(callEvent());
    record(runEndEvent());
    const found = await collect();
    expect(points(found.get("governor.tool.calls"))).toEqual([
      { attributes: { tool: "search", outcome: "ok" }, value: 1 },
    ]);
    expect(points(found.get("governor.runs.stopped"))).toEqual([
      { attributes: { reason: "completed" }, value: 1 },
    ]);
    await provider.shutdown();
  });

  it("names its instrumentation scope @governor/core with the package version", async () => {
    const { provider, reader, exporter } = sdk();
    metrics.setGlobalMeterProvider(provider);
    createOtelRecorder()(callEvent());
    await reader.forceFlush();
    const scope = exporter.getMetrics().at(-1)?.scopeMetrics[0]?.scope;
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
    expect(scope).toMatchObject({ name: "@governor/core", version: pkg.version });
    await provider.shutdown();
  });

  it("issue 9.6: records a tool nobody declared as (unknown) until a call of it succeeds", async () => {
    const { provider, collect } = sdk();
    const record = createOtelRecorder({ meter: provider.getMeter("test"), maxTools: 1 });
    record(decisionEvent({ tool: "lookup" }));
    record(callEvent({ tool: "lookup", outcome: "model" }));
    record(callEvent({ tool: "lookup", outcome: "ok" }));
    record(decisionEvent({ tool: "lookup" }));
    // Past maxTools, even a tool that succeeds stays (unknown).
    record(callEvent({ tool: "other", outcome: "replayed" }));
    record(callEvent({ tool: "x".repeat(129), outcome: "ok" }));
    const found = await collect();
    expect(points(found.get("governor.tool.calls"))).toEqual(
      sorted([
        { attributes: { tool: "(unknown)", outcome: "model" }, value: 1 },
        { attributes: { tool: "lookup", outcome: "ok" }, value: 1 },
        { attributes: { tool: "(unknown)", outcome: "replayed" }, value: 1 },
        { attributes: { tool: "(unknown)", outcome: "ok" }, value: 1 },
      ]),
    );
    expect(points(found.get("governor.tool.failures"))).toEqual(
      sorted([
        {
          attributes: {
            tool: "(unknown)",
            action: "correct_arguments",
            reason: "invalid_argument",
          },
          value: 1,
        },
        {
          attributes: { tool: "lookup", action: "correct_arguments", reason: "invalid_argument" },
          value: 1,
        },
      ]),
    );
    expect(() => createOtelRecorder({ maxTools: -1 })).toThrow(
      /maxTools must be a whole number >= 0, got -1/,
    );
    await provider.shutdown();
  });

  it("counts calls the same whether its metrics are a governor's only listener or not", async () => {
    // With only its metrics listening, a governor counts a call without building its event.
    const secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    const recorded = async (withListener: boolean) => {
      const { provider, collect } = sdk();
      const events: GovernorEvent[] = [];
      const governor = createGovernor(
        { tools: { search: { effect: "read_only" } } },
        {
          meter: provider.getMeter("test"),
          ...(withListener && { onEvent: (e: GovernorEvent) => events.push(e) }),
        },
      );
      const run = governor.startRun();
      const ok = { content: [{ type: "text", text: "ok" }] };
      const bad = { content: [{ type: "text", text: "Invalid argument: id" }], isError: true };
      await run.call({ tool: "search", server: "web", args: { q: 1 } }, async () => ok);
      await run.call({ tool: "search", server: "web", args: { q: 2 } }, async () => ok);
      await run.call({ tool: "fresh", args: { q: 3 } }, async () => ok);
      await run.call({ tool: `invented_${secret}`, args: { q: 4 } }, async () => bad);
      run.end();
      const found = await collect();
      await provider.shutdown();
      return { calls: points(found.get("governor.tool.calls")), events };
    };
    const alone = await recorded(false);
    const shared = await recorded(true);
    expect(alone.calls).toEqual(
      sorted([
        { attributes: { tool: "search", server: "web", outcome: "ok" }, value: 2 },
        { attributes: { tool: "fresh", outcome: "ok" }, value: 1 },
        { attributes: { tool: "(unknown)", outcome: "model" }, value: 1 },
      ]),
    );
    expect(shared.calls).toEqual(alone.calls);
    expect(shared.events.filter((e) => e.type === "call")).toHaveLength(4);
    expect(JSON.stringify(alone.calls)).not.toContain(secret);
  });

  it("observe-only: a call that failed does not prove its invented tool name exists", async () => {
    // Observe-only passes every failure through, so its call events say `ok`; a name a model
    // invented must not take one of the maxTools attribute slots for it.
    const recorded = async (withListener: boolean) => {
      const { provider, collect } = sdk();
      const governor = createGovernor(
        { observeOnly: true },
        {
          meter: provider.getMeter("test"),
          ...(withListener && { onEvent: () => {} }),
        },
      );
      const run = governor.startRun();
      const unknown = {
        content: [{ type: "text", text: "Unknown tool: invented" }],
        isError: true,
      };
      await run.call({ tool: "invented" }, async () => unknown);
      await run.call({ tool: "invented" }, async () => unknown);
      await run.call({ tool: "real", args: { q: 1 } }, async () => ({ content: [] }));
      run.end();
      const found = await collect();
      await provider.shutdown();
      return points(found.get("governor.tool.calls"));
    };
    const expected = sorted([
      { attributes: { tool: "(unknown)", outcome: "ok" }, value: 2 },
      { attributes: { tool: "real", outcome: "ok" }, value: 1 },
    ]);
    expect(await recorded(false)).toEqual(expected);
    expect(await recorded(true)).toEqual(expected);
  });

  it("never throws into the agent loop, whatever the meter does", () => {
    const broken: MeterLike = {
      createCounter: () => ({
        add: () => {
          throw new Error("exporter down");
        },
      }),
      createHistogram: () => {
        throw new Error("no histograms");
      },
    };
    const record = createOtelRecorder({ meter: broken });
    expect(() => {
      for (const event of sampleLog()) record(event);
    }).not.toThrow();
  });
});

describe("eventSchema", () => {
  it("accepts every event of the sample log and drops unknown fields", () => {
    for (const event of sampleLog()) expect(eventSchema.parse(event)).toEqual(event);
    expect(eventSchema.parse({ ...callEvent(), later: "field" })).toEqual(callEvent());
  });
});

describe("createJsonlSink and parseEvents", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("round-trips events through a file, appending to what is there", async () => {
    dir = await mkdtemp(join(tmpdir(), "governor-sink-"));
    const file = join(dir, "events.jsonl");
    const log = sampleLog();
    const first = createJsonlSink(file);
    const { write } = first; // unbound, as an onEvent hook
    for (const event of log.slice(0, 5)) write(event);
    await first.close();
    const second = createJsonlSink(file);
    for (const event of log.slice(5)) second.write(event);
    await second.close();
    second.write(callEvent()); // after close: dropped

    const text = await readFile(file, "utf8");
    expect(text.split("\n")).toHaveLength(log.length + 1);
    expect(parseEvents(text)).toEqual({ events: log, errors: [] });
    expect(first.lastError).toBeUndefined();
    expect(second.lastError).toBeUndefined();
  });

  it("has a file's lines on disk when write returns: a process.exit or a crash loses none", async () => {
    // A host that exits without awaiting close() (a crash, process.exit in a script) lost every
    // line still buffered in a write stream: 3,000 of 3,000 in a script that exited at once.
    dir = await mkdtemp(join(tmpdir(), "governor-sink-"));
    const file = join(dir, "events.jsonl");
    const sink = createJsonlSink(file);
    const log = sampleLog();
    for (const event of log) sink.write(event);
    // No await since the writes: nothing could have been flushed in the background.
    expect(parseEvents(readFileSync(file, "utf8"))).toEqual({ events: log, errors: [] });
    await sink.close();
    expect(sink.lastError).toBeUndefined();
  });

  it("writes to a stream without ending it, and to any object with write()", async () => {
    const stream = new PassThrough();
    const chunks: string[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
    const sink = createJsonlSink(stream);
    sink.write(callEvent());
    await sink.close();
    expect(stream.writableEnded).toBe(false);
    expect(chunks.join("")).toBe(`${JSON.stringify(callEvent())}\n`);

    const lines: string[] = [];
    const asyncSink = createJsonlSink({
      write: async (line: string) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        lines.push(line);
      },
    });
    asyncSink.write(runEndEvent());
    await asyncSink.close();
    expect(lines).toEqual([`${JSON.stringify(runEndEvent())}\n`]);
  });

  it("keeps errors instead of throwing them", async () => {
    dir = await mkdtemp(join(tmpdir(), "governor-sink-"));
    const seen: unknown[] = [];
    const missing = createJsonlSink(join(dir, "no", "such", "dir.jsonl"), {
      onError: (error) => seen.push(error),
    });
    missing.write(callEvent());
    await missing.close();
    missing.write(callEvent());
    expect((missing.lastError as NodeJS.ErrnoException).code).toBe("ENOENT");
    expect(seen).toHaveLength(1);

    const throwing = createJsonlSink(
      {
        write: () => {
          throw new Error("disk full");
        },
      },
      {
        onError: () => {
          throw new Error("hook fails too");
        },
      },
    );
    expect(() => throwing.write(callEvent())).not.toThrow();
    expect((throwing.lastError as Error).message).toBe("disk full");

    const rejecting = createJsonlSink({ write: () => Promise.reject(new Error("later")) });
    rejecting.write(callEvent());
    await rejecting.close();
    expect((rejecting.lastError as Error).message).toBe("later");
  });

  it("reports each bad line with its number and the path of each bad field", () => {
    const good = JSON.stringify(callEvent());
    const text = [
      good,
      "",
      "{not json",
      JSON.stringify({ ...callEvent(), v: 2 }),
      JSON.stringify({ ...callEvent(), outcome: "weird", attempts: "1" }),
      JSON.stringify({ ...runEndEvent(), summary: { ...runEndEvent().summary, calls: -1 } }),
      JSON.stringify({ ...callEvent(), type: "mystery" }),
      JSON.stringify({ ...decisionEvent(), fingerprint: "XYZ" }),
      "[1, 2]",
      `${good}\r`,
    ].join("\n");
    const { events, errors } = parseEvents(text);
    expect(events).toEqual([callEvent(), callEvent()]);
    expect(errors).toHaveLength(7);
    expect(errors[0]).toMatch(/^line 3: not JSON \(/);
    expect(errors[1]).toBe("line 4: unsupported event version 2 (this reader knows 1)");
    expect(errors[2]).toMatch(/^line 5: outcome: .*"ok".*; attempts: .*expected number/);
    expect(errors[3]).toMatch(/^line 6: summary\.calls: /);
    expect(errors[4]).toMatch(/^line 7: type: /);
    expect(errors[5]).toBe("line 8: fingerprint: must be 16 lowercase hex digits");
    expect(errors[6]).toMatch(/^line 9: .*expected object/);
  });
});

describe("summarizeEvents", () => {
  it("computes the report figures of a log", () => {
    expect(summarizeEvents(sampleLog())).toEqual({
      events: 13,
      firstAt: 1_700_000_000_000,
      lastAt: 1_700_000_001_000,
      runs: 3,
      openRuns: 1,
      agedOutRuns: 0,
      stoppedBy: { budget_exhausted: 1, completed: 1, repeated_failure: 1 },
      budgetsExhausted: { calls: 1 },
      calls: { total: 5, wasted: 3, byOutcome: { ok: 1, replayed: 1, model: 2, stop: 1, host: 0 } },
      failures: 5,
      retries: { total: 2, byTool: { search: 2 } },
      topFingerprints: [
        {
          fingerprint: "aaaaaaaaaaaaaaaa",
          count: 2,
          runs: 1,
          tools: ["search"],
          reasons: ["timeout"],
          actions: ["retry_dependency"],
        },
        {
          fingerprint: "cccccccccccccccc",
          count: 2,
          runs: 1,
          tools: ["pay"],
          reasons: ["business_rule"],
          actions: ["stop"],
        },
        {
          fingerprint: "bbbbbbbbbbbbbbbb",
          count: 1,
          runs: 1,
          tools: ["search"],
          reasons: ["invalid_argument"],
          actions: ["correct_arguments"],
        },
      ],
      // No failure of the sample fell through to the default.
      unclassified: { total: 0, byServer: {} },
      learned: { total: 0, byChange: {}, byTool: {} },
    });
  });

  it("issue 12.5: counts the decisions learned outcomes demoted, by change and by tool", () => {
    const at = 1_700_000_000_000;
    const decision = (tool: string, learned?: DecisionEvent["learned"]): GovernorEvent => ({
      v: 1,
      type: "decision",
      at,
      runId: "r",
      tool,
      attempt: 1,
      action: learned?.to ?? "correct_arguments",
      reason: learned === undefined ? "invalid_argument" : "learned_futile",
      certainty: "failed",
      fingerprint: "0123456789abcdef",
      observed: false,
      ...(learned !== undefined && { learned }),
    });
    const report = summarizeEvents([
      decision("save"),
      decision("save", { from: "correct_arguments", to: "stop", paid: 0, futile: 4 }),
      decision("save", { from: "correct_arguments", to: "stop", paid: 0, futile: 5 }),
      decision("search", { from: "retry_dependency", to: "stop", paid: 0.2, futile: 6 }),
    ]);
    expect(report.learned).toEqual({
      total: 3,
      byChange: { "correct_arguments -> stop": 2, "retry_dependency -> stop": 1 },
      byTool: { save: 2, search: 1 },
    });
  });

  it("lists the top fingerprints only, most frequent first", () => {
    const events: GovernorEvent[] = [];
    for (let i = 0; i < 15; i++) {
      const fingerprint = i.toString(16).padStart(16, "0");
      for (let n = 0; n <= i; n++) events.push(decisionEvent({ fingerprint, runId: `run-${n}` }));
    }
    const report = summarizeEvents(events);
    expect(report.topFingerprints.map((f) => f.count)).toEqual([
      15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
    ]);
    expect(report.topFingerprints[0]?.runs).toBe(15);
    expect(report.openRuns).toBe(15);
    expect(summarizeEvents(events, { top: 2 }).topFingerprints).toHaveLength(2);
  });

  it("issue 9.7: summarizeEventLines reads lines one at a time, as summarizeEvents does", async () => {
    const log = sampleLog();
    async function* lines() {
      yield "";
      for (const [i, event] of log.entries()) {
        yield i === 3 ? `${JSON.stringify(event)}\r` : JSON.stringify(event);
        if (i === 1) yield "{oops";
      }
      yield JSON.stringify({ ...callEvent(), attempts: -1 });
    }
    const errors: string[] = [];
    const report = await summarizeEventLines(lines(), { onError: (m) => errors.push(m) });
    expect(report).toEqual(summarizeEvents(log));
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/^line 4: not JSON/);
    expect(errors[1]).toMatch(new RegExp(`^line ${log.length + 3}: attempts: `));
    // A sync iterable works too, and `top` applies.
    const top1 = await summarizeEventLines(
      log.map((e) => JSON.stringify(e)),
      { top: 1 },
    );
    expect(top1.topFingerprints).toHaveLength(1);
  });

  it("counts a fingerprint's runs once each, however the runs interleave", () => {
    const fingerprint = "abababababababab";
    const events = [
      decisionEvent({ fingerprint, runId: "a" }),
      decisionEvent({ fingerprint, runId: "b" }),
      decisionEvent({ fingerprint, runId: "a" }),
      runEndEvent({ runId: "a" }),
      decisionEvent({ fingerprint, runId: "b" }),
    ];
    const [top] = summarizeEvents(events).topFingerprints;
    expect(top).toMatchObject({ fingerprint, count: 4, runs: 2 });
  });

  it("counts a run once for a fingerprint whose decision came after the run's end", () => {
    // Two parallel calls of one run fail alike: the first ends the run, the second's decision is
    // logged after the run_end (as a real run does). One run met the fingerprint, not two.
    const fingerprint = "cdcdcdcdcdcdcdcd";
    const events = [
      decisionEvent({ fingerprint, runId: "a" }),
      runEndEvent({ runId: "a" }),
      decisionEvent({ fingerprint, runId: "a" }),
      decisionEvent({ fingerprint: "efefefefefefefef", runId: "a" }),
      decisionEvent({ fingerprint: "efefefefefefefef", runId: "a" }),
    ];
    expect(summarizeEvents(events).topFingerprints).toMatchObject([
      { fingerprint, count: 2, runs: 1 },
      { fingerprint: "efefefefefefefef", count: 2, runs: 1 },
    ]);
  });

  it("a later run that reuses a run id is a run of its own, open until its end", () => {
    // RunOptions.runId may be reused (a conversation's id): the second run starts after the
    // first ended, at its call 1.
    const fingerprint = "abababababababab";
    const input = (elapsedMs: number) => ({
      callHash: "0123456789abcdef",
      failure: { channel: "tool" as const, origin: "peer" as const, text: "x" },
      elapsedMs,
    });
    const events = [
      decisionEvent({ fingerprint, runId: "conv", call: 1, input: input(5) }),
      runEndEvent({ runId: "conv" }),
      // A call in flight at the end, logged after it: the same run.
      decisionEvent({
        fingerprint,
        runId: "conv",
        call: 2,
        input: input(1_500),
        at: 1_700_000_001_200,
      }),
      // A new run under the same id, started after the first ended.
      decisionEvent({
        fingerprint,
        runId: "conv",
        call: 1,
        input: input(10),
        at: 1_700_000_009_000,
      }),
    ];
    const report = summarizeEvents(events);
    expect(report).toMatchObject({ runs: 1, openRuns: 1 });
    expect(report.topFingerprints).toMatchObject([{ fingerprint, count: 3, runs: 2 }]);
  });

  it("summarizes an empty log", () => {
    const report = summarizeEvents([]);
    expect(report).toMatchObject({ events: 0, firstAt: null, lastAt: null, runs: 0, openRuns: 0 });
    expect(report.calls.total).toBe(0);
    expect(report.topFingerprints).toEqual([]);
  });
});

describe("summarizeEvents in bounded memory", () => {
  it("a log of more runs, fingerprints and tools than it tracks: counts stay exact, top lists state their error", () => {
    const runs = REPORT_LIMITS.runs + 20_000;
    const t0 = 1_700_000_000_000;
    function* events(): Generator<GovernorEvent> {
      for (let i = 0; i < runs; i++) {
        const hot = i % 50 === 0;
        yield {
          v: 1,
          type: "decision",
          at: t0 + i,
          runId: `run-${i}`,
          tool: hot ? "hot_tool" : `tool_${i}`,
          attempt: 1,
          action: "retry_dependency",
          reason: "unavailable",
          certainty: "failed",
          fingerprint: hot ? "ffffffffffffffff" : i.toString(16).padStart(16, "0"),
          observed: false,
        };
      }
    }
    const report = summarizeEvents(events(), { top: 3 });
    // Every run is counted open, those forgotten included.
    expect(report.openRuns).toBe(runs);
    expect(report.agedOutRuns).toBe(20_000);
    expect(report.failures).toBe(runs);
    expect(report.retries.total).toBe(runs);
    // The frequent fingerprint and tool are found, their counts over by at most the stated error.
    const [top] = report.topFingerprints;
    expect(top?.fingerprint).toBe("ffffffffffffffff");
    const hot = runs / 50;
    expect(top?.count).toBeGreaterThanOrEqual(hot);
    expect((top?.count ?? 0) - hot).toBeLessThanOrEqual(top?.error ?? 0);
    expect(top?.error ?? 0).toBeLessThanOrEqual(runs / REPORT_LIMITS.fingerprints);
    expect(Object.keys(report.retries.byTool)[0]).toBe("hot_tool");
    expect(Object.keys(report.retries.byTool).length).toBe(REPORT_LIMITS.listed + 1);
    expect(report.retries.byTool[OTHER_TOOLS]).toBeGreaterThan(0);
  });
});
