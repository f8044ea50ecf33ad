import type { BudgetName } from "./decide.ts";
import type { CallOutcomeKind, GovernorEvent, RunEndReason } from "./events.ts";
import type { Action, Reason } from "./types.ts";

/** One failure fingerprint in a {@link Report}. */
export interface FingerprintReport {
  readonly fingerprint: string;
  /** Failed attempts with this fingerprint (decision events). */
  readonly count: number;
  /** Runs it occurred in. */
  readonly runs: number;
  /** Tools it came from, sorted. */
  readonly tools: string[];
  /** The failure's own reasons (`cause` when the decision's reason is a run rule), sorted. */
  readonly reasons: Reason[];
  /** The actions decided for it, sorted. */
  readonly actions: Action[];
}

/** What `governor report` prints: figures derived from an event log. Plain JSON. */
export interface Report {
  /** Events read. */
  readonly events: number;
  /** Earliest and latest `at` (epoch ms), or null without events. */
  readonly firstAt: number | null;
  readonly lastAt: number | null;
  /** Runs that ended (`run_end` events). */
  readonly runs: number;
  /** Runs with events but no `run_end`: still running when the log was cut, or lost. */
  readonly openRuns: number;
  /** Ended runs by reason (`completed` when the host ended the run), most frequent first. */
  readonly stoppedBy: Partial<Record<RunEndReason, number>>;
  /** Runs stopped with `budget_exhausted`, by budget. */
  readonly budgetsExhausted: Partial<Record<BudgetName, number>>;
  readonly calls: {
    /** Tool calls (`call` events: each `run.call`, retries not counted apart). */
    readonly total: number;
    /**
     * Calls that gave no usable result: outcome `model` (the model got an error to act on),
     * `stop` (the call ended the run) or `host` (the failure went to the host).
     */
    readonly wasted: number;
    readonly byOutcome: Record<CallOutcomeKind, number>;
  };
  /** Failed attempts (`decision` events). */
  readonly failures: number;
  /** Decisions to retry a dependency (action `retry_dependency`). */
  readonly retries: {
    readonly total: number;
    /** Most frequent first. */
    readonly byTool: Record<string, number>;
  };
  /** The most frequent failure fingerprints, most frequent first (ties by fingerprint). */
  readonly topFingerprints: FingerprintReport[];
}

/** Options of {@link summarizeEvents}. */
export interface SummarizeOptions {
  /**
   * How many fingerprints to list.
   * @default 10
   */
  top?: number;
}

const WASTED: ReadonlySet<CallOutcomeKind> = new Set<CallOutcomeKind>(["model", "stop", "host"]);

function bump<K extends string>(counts: Map<K, number>, key: K): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Counts as a plain object, most frequent first, ties in key order. */
function byCount<K extends string>(counts: Map<K, number>): Partial<Record<K, number>> {
  const entries = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return Object.fromEntries(entries) as Partial<Record<K, number>>;
}

interface FingerprintTally {
  count: number;
  readonly runs: Set<string>;
  readonly tools: Set<string>;
  readonly reasons: Set<Reason>;
  readonly actions: Set<Action>;
}

/**
 * Summarizes an event log (see {@link parseEvents}): runs stopped by reason, top fingerprints,
 * retries, wasted calls. A pure function of the events; their order does not matter.
 *
 * @example
 * const report = summarizeEvents(parseEvents(text).events);
 */
export function summarizeEvents(
  events: readonly GovernorEvent[],
  options: SummarizeOptions = {},
): Report {
  const top = options.top ?? 10;
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  const seenRuns = new Set<string>();
  const endedRuns = new Set<string>();
  let runs = 0;
  const stoppedBy = new Map<RunEndReason, number>();
  const budgets = new Map<BudgetName, number>();
  const byOutcome: Record<CallOutcomeKind, number> = {
    ok: 0,
    replayed: 0,
    model: 0,
    stop: 0,
    host: 0,
  };
  let calls = 0;
  let wasted = 0;
  let failures = 0;
  let retries = 0;
  const retriesByTool = new Map<string, number>();
  const fingerprints = new Map<string, FingerprintTally>();

  for (const event of events) {
    firstAt = firstAt === null ? event.at : Math.min(firstAt, event.at);
    lastAt = lastAt === null ? event.at : Math.max(lastAt, event.at);
    seenRuns.add(event.runId);
    switch (event.type) {
      case "call":
        calls += 1;
        byOutcome[event.outcome] += 1;
        if (WASTED.has(event.outcome)) wasted += 1;
        break;
      case "decision": {
        failures += 1;
        if (event.action === "retry_dependency") {
          retries += 1;
          bump(retriesByTool, event.tool);
        }
        let tally = fingerprints.get(event.fingerprint);
        if (tally === undefined) {
          tally = {
            count: 0,
            runs: new Set(),
            tools: new Set(),
            reasons: new Set(),
            actions: new Set(),
          };
          fingerprints.set(event.fingerprint, tally);
        }
        tally.count += 1;
        tally.runs.add(event.runId);
        tally.tools.add(event.tool);
        tally.reasons.add(event.cause ?? event.reason);
        tally.actions.add(event.action);
        break;
      }
      case "run_end":
        runs += 1;
        endedRuns.add(event.runId);
        bump(stoppedBy, event.summary.reason);
        if (event.summary.budget !== undefined) bump(budgets, event.summary.budget);
        break;
    }
  }

  const topFingerprints = [...fingerprints]
    .sort((a, b) => b[1].count - a[1].count || (a[0] < b[0] ? -1 : 1))
    .slice(0, Math.max(0, top))
    .map(
      ([fingerprint, t]): FingerprintReport => ({
        fingerprint,
        count: t.count,
        runs: t.runs.size,
        tools: [...t.tools].sort(),
        reasons: [...t.reasons].sort(),
        actions: [...t.actions].sort(),
      }),
    );

  return {
    events: events.length,
    firstAt,
    lastAt,
    runs,
    openRuns: [...seenRuns].filter((id) => !endedRuns.has(id)).length,
    stoppedBy: byCount(stoppedBy),
    budgetsExhausted: byCount(budgets),
    calls: { total: calls, wasted, byOutcome },
    failures,
    retries: { total: retries, byTool: byCount(retriesByTool) as Record<string, number> },
    topFingerprints,
  };
}
