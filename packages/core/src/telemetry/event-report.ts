import type { BudgetName } from "../judge/decide.ts";
import type { Action, Reason } from "../types.ts";
import { parseEventLine } from "./event-log.ts";
import type { CallOutcomeKind, GovernorEvent, RunEndReason } from "./events.ts";
import { HeavyHitters } from "./heavy-hitters.ts";

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
  /**
   * Present when the log held more fingerprints than the report tracks ({@link REPORT_LIMITS}):
   * `count` may be over the true count by at most this much (never under), and `runs`, `tools`,
   * `reasons` and `actions` cover the attempts since it was last tracked.
   */
  readonly error?: number;
}

/**
 * What a report keeps, whatever the log holds: its memory stays bounded (docs/telemetry.md).
 * Fingerprints and per-tool counts are the most frequent ones (Space-Saving); runs past
 * `runs` are forgotten oldest first, those without an end counted in `openRuns` and `agedOutRuns`.
 */
export const REPORT_LIMITS = {
  /** Fingerprints tracked at once. */
  fingerprints: 10_000,
  /** Tools (and servers) tracked at once per count. */
  tools: 1_000,
  /** Tools (and servers) listed in a count; the rest are summed as `(other tools)`. */
  listed: 100,
  /** Runs remembered at once. */
  runs: 10_000,
  /** Tools listed per fingerprint. */
  toolsPerFingerprint: 8,
} as const;

/** The key summing the tools a count does not list. */
export const OTHER_TOOLS = "(other tools)";

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
  /**
   * Of `openRuns`, those forgotten to keep memory bounded (more than `REPORT_LIMITS.runs` runs at
   * once): an event of one after that counts it again. 0 for most logs.
   */
  readonly agedOutRuns: number;
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
    /**
     * Most frequent first, at most `REPORT_LIMITS.listed` tools and `(other tools)` for the rest.
     */
    readonly byTool: Record<string, number>;
  };
  /** The most frequent failure fingerprints, most frequent first (ties by fingerprint). */
  readonly topFingerprints: FingerprintReport[];
  /**
   * Failed attempts that no policy rule, signal or built-in rule classified: they fell through to
   * the default (reason `unclassified`, or the `cause` of a run rule's stop). Where a policy rule
   * is worth writing.
   */
  readonly unclassified: {
    readonly total: number;
    /**
     * By server (`(none)` for calls without one), most frequent first: `unclassified` of its
     * `failures`.
     */
    readonly byServer: Record<string, { readonly unclassified: number; readonly failures: number }>;
  };
  /**
   * Decisions that learned outcomes demoted (docs/learning.md): how many, by what they would have
   * been and became (`"correct_arguments -> stop"`), and by tool, most frequent first.
   */
  readonly learned: {
    readonly total: number;
    readonly byChange: Record<string, number>;
    readonly byTool: Record<string, number>;
  };
}

/** The server key of a decision without a server. */
export const NO_SERVER = "(none)";

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

function none(): undefined {
  return undefined;
}

/**
 * The most counted keys, most frequent first, at most `REPORT_LIMITS.listed`, and the rest of
 * `total` as `(other tools)`.
 */
function listed(counts: HeavyHitters<undefined>, total: number): Record<string, number> {
  const out: Record<string, number> = {};
  let shown = 0;
  for (const { key, count } of counts.top(REPORT_LIMITS.listed)) {
    out[key] = count;
    shown += count;
  }
  if (total > shown) out[OTHER_TOOLS] = total - shown;
  return out;
}

/** Small arrays, not sets: a log of new fingerprints replaces one per decision. */
interface FingerprintTally {
  runs: number;
  readonly tools: string[];
  readonly reasons: Reason[];
  readonly actions: Action[];
}

function newFingerprintTally(): FingerprintTally {
  return { runs: 0, tools: [], reasons: [], actions: [] };
}

/** A replaced fingerprint's tally, cleared for the one taking its place. */
function clearedTally(t: FingerprintTally): FingerprintTally {
  t.runs = 0;
  t.tools.length = 0;
  t.reasons.length = 0;
  t.actions.length = 0;
  return t;
}

function addOnce<T>(list: T[], item: T, max = Number.POSITIVE_INFINITY): void {
  if (list.length < max && !list.includes(item)) list.push(item);
}

/** What the summary keeps of a run: when it ended, and its fingerprints. */
interface RunTally {
  /** The `at` of its `run_end`; undefined while open. */
  endedAt: number | undefined;
  /**
   * Fingerprints seen in the run, to count each run once per fingerprint: while it is open one
   * as a string, more as a set. After its end they are kept as one string, `\n` between them (a
   * set per ended run doubled the memory of a large log): a call in flight when the run ended
   * logs its decision after the `run_end`.
   */
  fingerprints: Set<string> | string | undefined;
}

/**
 * Whether an event logged after its run id's `run_end` (at `endedAt`) is of a later run that
 * reuses the id (`RunOptions.runId`): its run, or its call 1, began after that end. A call in
 * flight at the end began before it; a call made after the stop is not call 1.
 */
function startsRunAfter(event: GovernorEvent, endedAt: number): boolean {
  if (event.type === "run_end") return event.at - event.summary.durationMs > endedAt;
  if (event.call !== 1) return false;
  if (event.type === "call") return event.at - event.durationMs > endedAt;
  return event.input !== undefined && event.at - event.input.elapsedMs > endedAt;
}

/** Notes the fingerprint in the run; whether the run had not met it before. */
function firstInRun(run: RunTally, fingerprint: string): boolean {
  const seen = run.fingerprints;
  if (seen === undefined) {
    // Most runs meet one fingerprint, if any: a string, not a set per run.
    run.fingerprints = fingerprint;
    return true;
  }
  if (typeof seen === "string") {
    if (run.endedAt === undefined && !seen.includes("\n")) {
      if (seen === fingerprint) return false;
      run.fingerprints = new Set([seen, fingerprint]);
      return true;
    }
    // An ended run (rare: a decision of a call still in flight when the run ended).
    if (seen.split("\n").includes(fingerprint)) return false;
    run.fingerprints = seen === "" ? fingerprint : `${seen}\n${fingerprint}`;
    return true;
  }
  if (seen.has(fingerprint)) return false;
  seen.add(fingerprint);
  return true;
}

/**
 * Tallies events one at a time, so a log of any length is summarized without holding it: what it
 * keeps grows with the distinct runs, fingerprints and tools, not with the events.
 */
class EventTally {
  private firstAt: number | null = null;
  private lastAt: number | null = null;
  private events = 0;
  private ended = 0;
  private readonly runs = new Map<string, RunTally>();
  private agedOut = 0;
  private readonly stoppedBy = new Map<RunEndReason, number>();
  private readonly budgets = new Map<BudgetName, number>();
  private readonly byOutcome: Record<CallOutcomeKind, number> = {
    ok: 0,
    replayed: 0,
    model: 0,
    stop: 0,
    host: 0,
  };
  private calls = 0;
  private wasted = 0;
  private failures = 0;
  private retries = 0;
  private readonly retriesByTool = new HeavyHitters<undefined>(REPORT_LIMITS.tools, none);
  private readonly fingerprints = new HeavyHitters<FingerprintTally>(
    REPORT_LIMITS.fingerprints,
    newFingerprintTally,
    clearedTally,
  );
  private unclassified = 0;
  private learned = 0;
  private readonly learnedByChange = new Map<string, number>();
  private readonly learnedByTool = new HeavyHitters<undefined>(REPORT_LIMITS.tools, none);
  /** Failures by server (the count), with the unclassified ones among them. */
  private readonly byServer = new HeavyHitters<{ unclassified: number }>(
    REPORT_LIMITS.tools,
    () => ({
      unclassified: 0,
    }),
  );

  add(event: GovernorEvent): void {
    this.events += 1;
    this.firstAt = this.firstAt === null ? event.at : Math.min(this.firstAt, event.at);
    this.lastAt = this.lastAt === null ? event.at : Math.max(this.lastAt, event.at);
    let run = this.runs.get(event.runId);
    if (run === undefined || (run.endedAt !== undefined && startsRunAfter(event, run.endedAt))) {
      const forgotten =
        run === undefined && this.runs.size >= REPORT_LIMITS.runs ? this.forgetOldestRun() : run;
      // A forgotten run's tally is reused: a log of new runs allocates none per run.
      run = forgotten ?? { endedAt: undefined, fingerprints: undefined };
      run.endedAt = undefined;
      run.fingerprints = undefined;
      this.runs.set(event.runId, run);
    }
    switch (event.type) {
      case "call":
        this.calls += 1;
        this.byOutcome[event.outcome] += 1;
        if (WASTED.has(event.outcome)) this.wasted += 1;
        return;
      case "decision":
        this.addDecision(event, run);
        return;
      case "run_end":
        this.ended += 1;
        run.endedAt = event.at;
        if (run.fingerprints instanceof Set) run.fingerprints = [...run.fingerprints].join("\n");
        bump(this.stoppedBy, event.summary.reason);
        if (event.summary.budget !== undefined) bump(this.budgets, event.summary.budget);
        return;
    }
  }

  /**
   * The run met first goes (a Map keeps insertion order): an open one is counted aged out.
   * Answers its tally, for the next run.
   */
  private forgetOldestRun(): RunTally | undefined {
    for (const [id, run] of this.runs) {
      this.runs.delete(id);
      if (run.endedAt === undefined) this.agedOut += 1;
      return run;
    }
    return undefined;
  }

  private addDecision(event: Extract<GovernorEvent, { type: "decision" }>, run: RunTally): void {
    this.failures += 1;
    const server = this.byServer.add(event.server ?? NO_SERVER).entry.value;
    if ((event.cause ?? event.reason) === "unclassified") {
      this.unclassified += 1;
      server.unclassified += 1;
    }
    if (event.learned !== undefined) {
      this.learned += 1;
      bump(this.learnedByChange, `${event.learned.from} -> ${event.learned.to}`);
      this.learnedByTool.add(event.tool);
    }
    if (event.action === "retry_dependency") {
      this.retries += 1;
      this.retriesByTool.add(event.tool);
    }
    const tally = this.fingerprints.add(event.fingerprint).entry.value;
    if (firstInRun(run, event.fingerprint)) tally.runs += 1;
    addOnce(tally.tools, event.tool, REPORT_LIMITS.toolsPerFingerprint);
    addOnce(tally.reasons, event.cause ?? event.reason);
    addOnce(tally.actions, event.action);
  }

  report(top: number): Report {
    const topFingerprints = this.fingerprints.top(top).map(
      ({ key, count, error, value: t }): FingerprintReport => ({
        fingerprint: key,
        count,
        runs: t.runs,
        tools: [...t.tools].sort(),
        reasons: [...t.reasons].sort(),
        actions: [...t.actions].sort(),
        ...(error > 0 && { error }),
      }),
    );
    let openRuns = this.agedOut;
    for (const run of this.runs.values()) if (run.endedAt === undefined) openRuns += 1;
    return {
      events: this.events,
      firstAt: this.firstAt,
      lastAt: this.lastAt,
      runs: this.ended,
      openRuns,
      agedOutRuns: this.agedOut,
      stoppedBy: byCount(this.stoppedBy),
      budgetsExhausted: byCount(this.budgets),
      calls: { total: this.calls, wasted: this.wasted, byOutcome: { ...this.byOutcome } },
      failures: this.failures,
      retries: {
        total: this.retries,
        byTool: listed(this.retriesByTool, this.retries),
      },
      topFingerprints,
      unclassified: {
        total: this.unclassified,
        byServer: Object.fromEntries(
          this.byServer
            .top()
            .filter((t) => t.value.unclassified > 0)
            .sort((a, b) => b.value.unclassified - a.value.unclassified || (a.key < b.key ? -1 : 1))
            .slice(0, REPORT_LIMITS.listed)
            .map((t) => [t.key, { unclassified: t.value.unclassified, failures: t.count }]),
        ),
      },
      learned: {
        total: this.learned,
        byChange: byCount(this.learnedByChange) as Record<string, number>,
        byTool: listed(this.learnedByTool, this.learned),
      },
    };
  }
}

/**
 * Summarizes an event log (see {@link parseEvents}): runs stopped by reason, top fingerprints,
 * retries, wasted calls. A pure function of the events; their order does not matter.
 *
 * @example
 * const report = summarizeEvents(parseEvents(text).events);
 */
export function summarizeEvents(
  events: Iterable<GovernorEvent>,
  options: SummarizeOptions = {},
): Report {
  const tally = new EventTally();
  for (const event of events) tally.add(event);
  return tally.report(options.top ?? 10);
}

/** Options of {@link summarizeEventLines}. */
export interface SummarizeLinesOptions extends SummarizeOptions {
  /**
   * Called with `line N: ...` (1-based, with the path of each bad field) for each line that is
   * not an event; the reading goes on.
   */
  onError?: (message: string) => void;
}

/**
 * Summarizes an event log read line by line (each item one line, without its `\n`), as
 * {@link summarizeEvents} does, without holding the log: a log of any size is read in bounded
 * memory. Blank lines are skipped; bad lines go to `onError`.
 *
 * @example
 * const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
 * const problems: string[] = [];
 * const report = await summarizeEventLines(lines, { onError: (m) => problems.push(m) });
 */
export async function summarizeEventLines(
  lines: AsyncIterable<string> | Iterable<string>,
  options: SummarizeLinesOptions = {},
): Promise<Report> {
  const tally = new EventTally();
  let n = 0;
  for await (const line of lines) {
    n += 1;
    const parsed = parseEventLine(line);
    if (parsed === undefined) continue;
    if ("error" in parsed) options.onError?.(`line ${n}: ${parsed.error}`);
    else tally.add(parsed);
  }
  return tally.report(options.top ?? 10);
}
