import type { Action, GovernorEvent, Reason, RunEndReason } from "@governor/core";

// Which tool stopped which runs, and why: stopped runs counted by reason and tool with one
// example message each, and the last few stopped runs step by step (their calls, attempts and
// decisions). Gathered in one pass in bounded memory: the steps of runs still open are buffered
// up to a cap of runs and of steps per run; only stopped runs' steps are kept past their end.

/** Reason × tool pairs counted apart; the rest are summed under `(other)`. */
const MAX_PAIRS = 200;
/** Stopped runs kept step by step (the latest). */
export const MAX_STOPPED_RUNS = 20;
/**
 * Open runs whose steps are buffered at once; the oldest are dropped first. With
 * {@link MAX_STEPS} steps of at most {@link MAX_TEXT} characters each, a few MB at most.
 */
const MAX_OPEN_RUNS = 500;
/** Steps kept per run: the first ones, then a count of those left out. */
const MAX_STEPS = 40;
/** Longest example or failure text kept. */
const MAX_TEXT = 240;

/** The tool of a stopped run without a failure (a budget spent before any call failed). */
export const NO_TOOL = "(no failing call)";

/** Stopped runs of one reason whose last failure was one tool's. */
export interface StopRow {
  readonly reason: RunEndReason;
  readonly tool: string;
  readonly runs: number;
  /** One run's last failure, redacted as the model read it. */
  readonly example: string;
}

/** One step of a run: a decision on a failed attempt, or the end of a call. */
export type RunStep =
  | {
      readonly kind: "decision";
      /** Ms since the run started. */
      readonly atMs: number;
      readonly tool: string;
      readonly call: number | undefined;
      readonly attempt: number;
      readonly action: Action;
      readonly reason: Reason;
      readonly delayMs: number | undefined;
      readonly text: string | undefined;
    }
  | {
      readonly kind: "call";
      readonly atMs: number;
      readonly tool: string;
      readonly call: number | undefined;
      readonly outcome: string;
      readonly attempts: number;
      readonly durationMs: number;
    };

/** A stopped run, step by step. */
export interface StoppedRun {
  readonly runId: string;
  readonly reason: RunEndReason;
  readonly tool: string;
  readonly at: number;
  readonly durationMs: number;
  readonly calls: number;
  readonly attempts: number;
  readonly steps: readonly RunStep[];
  /** Steps left out past {@link MAX_STEPS}. */
  readonly moreSteps: number;
}

const cut = (text: string) => (text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT - 1)}…`);

/** A step as buffered while its run is open: `atMs` holds the event's epoch ms until the end. */
interface Buffered {
  readonly steps: RunStep[];
  more: number;
}

/** Gathers the stop table and the stopped runs' steps, one event at a time. */
export class StopTally {
  private readonly pairs = new Map<
    string,
    { reason: RunEndReason; tool: string; runs: number; example: string }
  >();
  private other = 0;
  private readonly open = new Map<string, Buffered>();
  private readonly stopped: StoppedRun[] = [];

  add(event: GovernorEvent): void {
    if (event.type !== "run_end") {
      let buffered = this.open.get(event.runId);
      if (buffered === undefined) {
        if (this.open.size >= MAX_OPEN_RUNS) {
          const oldest = this.open.keys().next().value;
          if (oldest !== undefined) this.open.delete(oldest);
        }
        buffered = { steps: [], more: 0 };
        this.open.set(event.runId, buffered);
      }
      // Kept as a small step (texts cut), not the event: an open run holds little.
      if (buffered.steps.length < MAX_STEPS) buffered.steps.push(...step(event, 0));
      else buffered.more += 1;
      return;
    }
    const buffered = this.open.get(event.runId);
    this.open.delete(event.runId);
    const { summary } = event;
    if (summary.reason === "completed") return;
    const tool = summary.lastFailure?.tool ?? NO_TOOL;
    const example = cut(summary.lastFailure?.text ?? "");
    const key = `${summary.reason}\u0000${tool}`;
    const pair = this.pairs.get(key);
    if (pair !== undefined) {
      pair.runs += 1;
      if (pair.example === "") pair.example = example;
    } else if (this.pairs.size < MAX_PAIRS) {
      this.pairs.set(key, { reason: summary.reason, tool, runs: 1, example });
    } else {
      this.other += 1;
    }
    const start = event.at - summary.durationMs;
    this.stopped.push({
      runId: event.runId,
      reason: summary.reason,
      tool,
      at: event.at,
      durationMs: summary.durationMs,
      calls: summary.calls,
      attempts: summary.attempts,
      steps: (buffered?.steps ?? []).map((s) => ({ ...s, atMs: Math.max(0, s.atMs - start) })),
      moreSteps: buffered?.more ?? 0,
    });
    if (this.stopped.length > MAX_STOPPED_RUNS) this.stopped.shift();
  }

  /** The stop table (most runs first) and the latest stopped runs (the latest first). */
  result(): { rows: StopRow[]; otherRuns: number; runs: StoppedRun[] } {
    const rows = [...this.pairs.values()]
      .sort(
        (a, b) =>
          b.runs - a.runs ||
          (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : a.tool < b.tool ? -1 : 1),
      )
      .map((p) => ({ ...p }));
    return { rows, otherRuns: this.other, runs: [...this.stopped].reverse() };
  }
}

/** The event as a step, timed `event.at - start`. */
function step(event: GovernorEvent, start: number): RunStep[] {
  const atMs = event.at - start;
  if (event.type === "decision") {
    return [
      {
        kind: "decision",
        atMs,
        tool: event.tool,
        call: event.call,
        attempt: event.attempt,
        action: event.action,
        reason: event.reason,
        delayMs: event.delayMs,
        text: event.input === undefined ? undefined : cut(event.input.failure.text),
      },
    ];
  }
  if (event.type === "call") {
    return [
      {
        kind: "call",
        atMs,
        tool: event.tool,
        call: event.call,
        outcome: event.outcome,
        attempts: event.attempts,
        durationMs: event.durationMs,
      },
    ];
  }
  return [];
}
