import type { Action, GovernorEvent, RunEndReason } from "@governor/core";
import { type StoppedRun, type StopRow, StopTally } from "./html-stops.ts";

// What the HTML report draws, gathered in one pass over the events in bounded memory: time
// buckets that widen as the log grows, per tool counts capped by tool, per run usage histograms.

/** The most time buckets kept; past it, the bucket width doubles and neighbours merge. */
const MAX_BUCKETS = 48;
/** Tools listed apart; the others are summed as `(other tools)`. */
export const MAX_TOOLS = 20;
const MAX_TRACKED_TOOLS = 1_000;

/** Per tool (and server) counts. */
export interface ToolCounts {
  calls: number;
  attempts: number;
  failures: number;
  retries: number;
  corrections: number;
  switches: number;
  stops: number;
}

/** Histogram edges of per-run usage: 0, 1, 2-3, 4-7, 8-15, 16-31, 32+. */
export const USAGE_BUCKETS = ["0", "1", "2-3", "4-7", "8-15", "16-31", "32+"] as const;

function usageBucket(n: number): number {
  if (n <= 0) return 0;
  return Math.min(USAGE_BUCKETS.length - 1, Math.floor(Math.log2(n)) + 1);
}

/** Run usage, per budget the summary counts. */
export type UsageName = "calls" | "attempts" | "failures" | "retries";

/** The aggregate a page is drawn from. Plain data; its size does not grow with the log. */
export interface HtmlAggregate {
  /** Bucket width in ms and the first bucket's start; `buckets[i]` counts run ends by reason. */
  readonly bucketMs: number;
  readonly start: number | null;
  readonly buckets: ReadonlyArray<Partial<Record<RunEndReason, number>>>;
  /** Per `server/tool`, the most called first, at most {@link MAX_TOOLS} plus `(other tools)`. */
  readonly tools: ReadonlyArray<{ readonly name: string } & ToolCounts>;
  /** Runs by how much of each counter they used. */
  readonly usage: Readonly<Record<UsageName, readonly number[]>>;
  /**
   * Stopped runs by reason and the tool of their last failure, with an example message each
   * (`otherRuns`: past the pairs counted apart), and the latest stopped runs step by step.
   */
  readonly stops: {
    readonly rows: readonly StopRow[];
    readonly otherRuns: number;
    readonly runs: readonly StoppedRun[];
  };
}

const ACTION_FIELD: Partial<Record<Action, keyof ToolCounts>> = {
  retry_dependency: "retries",
  correct_arguments: "corrections",
  switch_tool: "switches",
  stop: "stops",
};

const emptyCounts = (): ToolCounts => ({
  calls: 0,
  attempts: 0,
  failures: 0,
  retries: 0,
  corrections: 0,
  switches: 0,
  stops: 0,
});

/** Gathers {@link HtmlAggregate} one event at a time. */
export class HtmlTally {
  private bucketMs = 1_000;
  private start: number | null = null;
  private readonly buckets = new Map<number, Map<RunEndReason, number>>();
  private readonly tools = new Map<string, ToolCounts>();
  private readonly other = emptyCounts();
  private readonly stopTally = new StopTally();
  private readonly usage: Record<UsageName, number[]> = {
    calls: USAGE_BUCKETS.map(() => 0),
    attempts: USAGE_BUCKETS.map(() => 0),
    failures: USAGE_BUCKETS.map(() => 0),
    retries: USAGE_BUCKETS.map(() => 0),
  };

  add(event: GovernorEvent): void {
    this.stopTally.add(event);
    switch (event.type) {
      case "run_end":
        this.addRunEnd(event.at, event.summary.reason);
        for (const name of Object.keys(this.usage) as UsageName[]) {
          const row = this.usage[name];
          const i = usageBucket(event.summary[name]);
          row[i] = (row[i] ?? 0) + 1;
        }
        return;
      case "call": {
        const t = this.tool(event.server, event.tool);
        t.calls += 1;
        t.attempts += event.attempts;
        return;
      }
      case "decision": {
        // Refusals before any attempt (attempt 0) are not failed attempts.
        if (event.attempt === 0) return;
        const t = this.tool(event.server, event.tool);
        t.failures += 1;
        const field = ACTION_FIELD[event.action];
        if (field !== undefined) t[field] += 1;
        return;
      }
    }
  }

  private tool(server: string | undefined, tool: string): ToolCounts {
    const name = server === undefined ? tool : `${server}/${tool}`;
    let t = this.tools.get(name);
    if (t === undefined) {
      // A model inventing names cannot grow the tally without bound.
      if (this.tools.size >= MAX_TRACKED_TOOLS) return this.other;
      t = emptyCounts();
      this.tools.set(name, t);
    }
    return t;
  }

  private addRunEnd(at: number, reason: RunEndReason): void {
    if (this.start === null || at < this.start) {
      // Buckets are keyed from the earliest time seen: re-key when an earlier one comes.
      const old = [...this.buckets];
      const oldStart = this.start;
      this.start = Math.floor(at / this.bucketMs) * this.bucketMs;
      this.buckets.clear();
      for (const [i, counts] of old) {
        const t = (oldStart ?? 0) + i * this.bucketMs;
        this.merge(Math.floor((t - this.start) / this.bucketMs), counts);
      }
    }
    let i = Math.floor((at - this.start) / this.bucketMs);
    while (i >= MAX_BUCKETS) {
      this.widen();
      i = Math.floor((at - (this.start as number)) / this.bucketMs);
    }
    const counts = this.buckets.get(i) ?? new Map<RunEndReason, number>();
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
    this.buckets.set(i, counts);
  }

  private merge(i: number, counts: Map<RunEndReason, number>): void {
    const into = this.buckets.get(i) ?? new Map<RunEndReason, number>();
    for (const [reason, n] of counts) into.set(reason, (into.get(reason) ?? 0) + n);
    this.buckets.set(i, into);
  }

  private widen(): void {
    const old = [...this.buckets];
    this.buckets.clear();
    this.bucketMs *= 2;
    for (const [i, counts] of old) this.merge(Math.floor(i / 2), counts);
  }

  result(): HtmlAggregate {
    const size = this.buckets.size === 0 ? 0 : Math.max(...this.buckets.keys()) + 1;
    const buckets = Array.from({ length: size }, (_, i) =>
      Object.fromEntries(this.buckets.get(i) ?? []),
    );
    const sorted = [...this.tools].sort(
      (a, b) => b[1].calls - a[1].calls || (a[0] < b[0] ? -1 : 1),
    );
    const other = { ...this.other };
    for (const [, t] of sorted.slice(MAX_TOOLS)) {
      for (const k of Object.keys(other) as (keyof ToolCounts)[]) other[k] += t[k];
    }
    const tools = sorted.slice(0, MAX_TOOLS).map(([name, t]) => ({ name, ...t }));
    if (other.calls + other.failures > 0) tools.push({ name: "(other tools)", ...other });
    return {
      bucketMs: this.bucketMs,
      start: this.start,
      buckets,
      tools,
      usage: {
        calls: [...this.usage.calls],
        attempts: [...this.usage.attempts],
        failures: [...this.usage.failures],
        retries: [...this.usage.retries],
      },
      stops: this.stopTally.result(),
    };
  }
}
