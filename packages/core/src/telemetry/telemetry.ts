import { createRequire } from "node:module";
import { GovernorError } from "../errors.ts";
import type { CallOutcomeKind, GovernorEvent } from "./events.ts";

/** Metric attributes as Governor records them: string values only, no absent keys. */
export type MetricAttributesLike = Readonly<Record<string, string>>;

/** The part of an OpenTelemetry `Counter` Governor uses. */
export interface CounterLike {
  add(value: number, attributes?: MetricAttributesLike): void;
}

/** The part of an OpenTelemetry `Histogram` Governor uses. */
export interface HistogramLike {
  record(value: number, attributes?: MetricAttributesLike): void;
}

/** The part of OpenTelemetry's `MetricOptions` Governor passes. */
export interface InstrumentOptionsLike {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

/**
 * The part of an OpenTelemetry `Meter` Governor uses. A `Meter` from `@opentelemetry/api`
 * satisfies it, so core's types need no OpenTelemetry import.
 */
export interface MeterLike {
  createCounter(name: string, options?: InstrumentOptionsLike): CounterLike;
  createHistogram(name: string, options?: InstrumentOptionsLike): HistogramLike;
}

/** Options of {@link createOtelRecorder}. */
export interface OtelRecorderOptions {
  /**
   * The meter to record with.
   * @default `metrics.getMeter("@governor/core", version)` from `@opentelemetry/api` when it is
   * installed, looked up again on each event (so an SDK registered after the recorder was created
   * is still used); a recorder that does nothing when it is not installed.
   */
  meter?: MeterLike;
  /**
   * Tool names recorded as the `tool` attribute from the first event on (e.g. the names in the
   * policy and the tools the host offers). Other names become {@link UNKNOWN_TOOL} until a call
   * of that tool succeeds (outcome `ok` or `replayed`: the tool exists), up to `maxTools` of them:
   * names a model invents never fill the metric SDK's series limit.
   */
  knownTools?: Iterable<string>;
  /**
   * How many tool names besides `knownTools` may become attributes once a call of theirs
   * succeeded; later ones stay {@link UNKNOWN_TOOL}.
   * @default 200
   */
  maxTools?: number;
}

/** The `tool` attribute of a tool that is not (yet) known to exist: see `knownTools`. */
export const UNKNOWN_TOOL = "(unknown)";

/** Longer names are never attributes; MCP tool names are at most 128 characters. */
const MAX_TOOL_NAME = 128;
const DEFAULT_MAX_TOOLS = 200;

/**
 * The bounded set of tool names that may be metric attributes: the known ones, then names proven
 * to exist by a successful call, up to a limit. Everything else is one value.
 */
class ToolAttributes {
  private readonly known: ReadonlySet<string>;
  private readonly proven = new Set<string>();
  /**
   * Calls (run id and call number) that failed in observe-only mode: their `call` event says
   * `ok` (the failure passed through), which proves nothing of the tool. Emptied as their
   * `call` events come; cleared whole past a bound.
   */
  private readonly observedFailures = new Set<string>();

  constructor(
    known: Iterable<string>,
    private readonly max: number,
  ) {
    this.known = new Set(known);
  }

  /** The attribute for `name`; a successful call first admits it when there is room. */
  of(name: string, succeeded: boolean): string {
    if (this.known.has(name) || this.proven.has(name)) return name;
    if (succeeded && name.length <= MAX_TOOL_NAME && this.proven.size < this.max) {
      this.proven.add(name);
      return name;
    }
    return UNKNOWN_TOOL;
  }

  /** An observe-only decision: the call failed, whatever its `call` event will say. */
  failedObserved(runId: string, call: number): void {
    if (this.observedFailures.size >= MAX_OBSERVED_FAILURES) this.observedFailures.clear();
    this.observedFailures.add(`${call}:${runId}`);
  }

  /** Whether the call failed in observe-only mode (forgotten once asked). */
  tookObservedFailure(runId: string, call: number | undefined): boolean {
    return call !== undefined && this.observedFailures.delete(`${call}:${runId}`);
  }
}

/** Observe-only failures awaiting their call's event, at most. */
const MAX_OBSERVED_FAILURES = 10_000;

/** An event handler that records metrics: pass it as (or call it from) `onEvent`. */
export type EventRecorder = (event: GovernorEvent) => void;

interface Instruments {
  readonly calls: CounterLike;
  readonly failures: CounterLike;
  readonly retries: CounterLike;
  readonly runsStopped: CounterLike;
  readonly runDuration: HistogramLike;
}

const METER_NAME = "@governor/core";

// Agent runs last from milliseconds to many minutes; the SDK's default boundaries stop at 10 s.
const RUN_DURATION_BUCKETS_MS = [
  10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
  1_800_000,
];

function createInstruments(meter: MeterLike): Instruments {
  return {
    calls: meter.createCounter("governor.tool.calls", {
      description: "Tool calls made through Governor (each run.call), by how they ended.",
      unit: "{call}",
    }),
    failures: meter.createCounter("governor.tool.failures", {
      description: "Failed tool-call attempts, by the action decided and its reason.",
      unit: "{failure}",
    }),
    retries: meter.createCounter("governor.retries", {
      description: "Retries of a dependency Governor decided (action retry_dependency).",
      unit: "{retry}",
    }),
    runsStopped: meter.createCounter("governor.runs.stopped", {
      description: "Runs ended, by stop reason (`completed` when the host ended the run).",
      unit: "{run}",
    }),
    runDuration: meter.createHistogram("governor.run.duration", {
      description: "Wall time of a run, from start to end.",
      unit: "ms",
      advice: { explicitBucketBoundaries: RUN_DURATION_BUCKETS_MS },
    }),
  };
}

function withServer(
  attributes: Record<string, string>,
  server: string | undefined,
): Record<string, string> {
  if (server !== undefined) attributes.server = server;
  return attributes;
}

function recordCall(
  instruments: Instruments,
  tools: ToolAttributes,
  name: string,
  server: string | undefined,
  outcome: CallOutcomeKind,
  failed = false,
): void {
  const tool = tools.of(name, !failed && (outcome === "ok" || outcome === "replayed"));
  instruments.calls.add(1, withServer({ tool, outcome }, server));
}

function record(instruments: Instruments, tools: ToolAttributes, event: GovernorEvent): void {
  switch (event.type) {
    case "call": {
      const failed = tools.tookObservedFailure(event.runId, event.call);
      recordCall(instruments, tools, event.tool, event.server, event.outcome, failed);
      return;
    }
    case "decision": {
      // An attempt that failed (not a refusal before it: the call may still be made and succeed).
      if (event.observed && event.attempt > 0 && event.call !== undefined) {
        tools.failedObserved(event.runId, event.call);
      }
      const tool = tools.of(event.tool, false);
      instruments.failures.add(1, { tool, action: event.action, reason: event.reason });
      if (event.action === "retry_dependency") {
        instruments.retries.add(1, withServer({ tool, reason: event.reason }, event.server));
      }
      return;
    }
    case "run_end": {
      const { reason, budget, durationMs } = event.summary;
      instruments.runsStopped.add(1, budget === undefined ? { reason } : { reason, budget });
      instruments.runDuration.record(durationMs, { reason });
      return;
    }
  }
}

interface MetricsApi {
  getMeter(name: string, version?: string): MeterLike;
}

/** The global meter lookup of `@opentelemetry/api`, or undefined when it is not installed. */
function globalMeterLookup(): (() => MeterLike) | undefined {
  try {
    // A static import would make the optional peer dependency mandatory.
    const require = createRequire(import.meta.url);
    const { metrics } = require("@opentelemetry/api") as { metrics?: MetricsApi };
    if (metrics === undefined || typeof metrics.getMeter !== "function") return undefined;
    let version: string | undefined;
    try {
      // src/ and dist/ both sit one level below the package root.
      version = (require("../../package.json") as { version?: string }).version;
    } catch {
      version = undefined;
    }
    return () => metrics.getMeter(METER_NAME, version);
  } catch {
    return undefined;
  }
}

const noop: EventRecorder = () => {};

/**
 * Records Governor's metrics through the OpenTelemetry metrics API, from the run's events.
 * Without `options.meter` it uses the global meter provider of `@opentelemetry/api` (an optional
 * peer dependency): a no-op until the host installs an SDK, and a recorder that does nothing when
 * the package is not installed. It never throws into the agent loop.
 *
 * Instruments (see docs/telemetry.md):
 * - `governor.tool.calls` counter `{call}` (`tool`, `server`, `outcome`): one per `call` event.
 * - `governor.tool.failures` counter `{failure}` (`tool`, `action`, `reason`): one per `decision`
 *   event, i.e. per failed attempt (observe-only decisions included).
 * - `governor.retries` counter `{retry}` (`tool`, `server`, `reason`): decisions to retry.
 * - `governor.runs.stopped` counter `{run}` (`reason`, and `budget` for `budget_exhausted`): every
 *   run end, `completed` included, so the completed share is one query.
 * - `governor.run.duration` histogram `ms` (`reason`).
 *
 * `server` is left out when the call named no server. `tool` comes from a bounded set: the
 * `knownTools`, and names whose calls succeeded (up to `maxTools`); any other name is recorded
 * as {@link UNKNOWN_TOOL}, so names a model invents cannot fill the SDK's series limit.
 *
 * @example
 * const governor = createGovernor(policy, { onEvent: createOtelRecorder() });
 */
export function createOtelRecorder(options: OtelRecorderOptions = {}): EventRecorder {
  return createOtelMetrics(options)?.onEvent ?? noop;
}

/**
 * What a governor records its metrics through: the run's events, and a call's outcome without
 * its event (a governor whose only listener is its metrics builds no `call` event). Internal.
 */
export interface OtelMetrics {
  readonly onEvent: EventRecorder;
  /**
   * The `call` event's metric; `tool` and `server` bounded as `boundEvent` bounds them. `failed`:
   * the call failed in observe-only mode (its outcome says `ok`).
   */
  call(tool: string, server: string | undefined, outcome: CallOutcomeKind, failed?: boolean): void;
}

/**
 * {@link createOtelRecorder}'s metrics, or undefined when `@opentelemetry/api` is not installed and
 * no meter is given (nothing to record). Internal.
 */
export function createOtelMetrics(options: OtelRecorderOptions = {}): OtelMetrics | undefined {
  const given = options.meter;
  const maxTools = options.maxTools ?? DEFAULT_MAX_TOOLS;
  if (!Number.isInteger(maxTools) || maxTools < 0) {
    throw new GovernorError(
      "invalid_options",
      `maxTools must be a whole number >= 0, got ${String(options.maxTools)}`,
    );
  }
  const lookup = given === undefined ? globalMeterLookup() : () => given;
  if (lookup === undefined) return undefined;
  const tools = new ToolAttributes(options.knownTools ?? [], maxTools);
  let meter: MeterLike | undefined;
  let instruments: Instruments | undefined;
  // The API hands out a no-op meter until an SDK is registered and offers no proxy, so the meter
  // is looked up per event and instruments are made again when it changes.
  const current = (): Instruments => {
    const found = lookup();
    if (instruments === undefined || found !== meter) {
      meter = found;
      instruments = createInstruments(found);
    }
    return instruments;
  };
  return {
    onEvent(event) {
      try {
        record(current(), tools, event);
      } catch {
        // Metrics must never break the agent loop.
      }
    },
    call(tool, server, outcome, failed) {
      try {
        recordCall(current(), tools, tool, server, outcome, failed);
      } catch {
        // Metrics must never break the agent loop.
      }
    },
  };
}
