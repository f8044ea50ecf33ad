import type { GovernorEvent, Policy } from "@governor/core";
import { parseEventLine } from "@governor/core/judge";
import { type ReplayChange, type RunReplay, replayRun } from "./replay-run.ts";

/** A run the replay changed, could not follow to its end, or could not replay at all. */
export type RunDetail = Omit<RunReplay, "changes" | "decisions">;

/** What `governor replay --json` prints. Plain JSON. */
export interface ReplayReport {
  readonly decisions: {
    /** Recorded failures re-decided (those the replayed runs reached). */
    readonly total: number;
    readonly changed: number;
  };
  readonly runs: {
    /** Runs that ended in the log (`run_end`). */
    readonly total: number;
    /** Runs whose end or any decision changed. */
    readonly changed: number;
    readonly stoppedEarlier: number;
    readonly stoppedLater: number;
    /** Runs the replay could not follow to their end (the log cannot say what comes next). */
    readonly diverged: number;
    /** Runs written without the fields replay needs (an older Governor), not replayed. */
    readonly unreplayable: number;
    /** Runs with events but no `run_end` in the log, not replayed. */
    readonly open: number;
  };
  /** Attempts the recorded runs made after the point where the replayed runs stop. */
  readonly callsSaved: number;
  /** A lower bound on the attempts runs that would stop later would add. */
  readonly callsAdded: number;
  readonly changes: ReplayChange[];
  /** Each run that is not the same under the new policy. */
  readonly runDetails: RunDetail[];
}

/** Options of {@link replayEventLines}. */
export interface ReplayLinesOptions {
  /** Called with `line N: ...` for each line that is not an event; the reading goes on. */
  onError?: (message: string) => void;
}

/** How many ended run ids are remembered, to drop the calls logged after a run's end. */
const MAX_ENDED = 100_000;

/**
 * Whether an event logged after its run id's `run_end` opens a new run under the same id: its
 * run (or, for a call, its first call) began after that end. Events of the ended run never do:
 * a call made after the stop is not its first, and a call in flight at the stop began before it.
 */
function startsRunAfter(event: GovernorEvent, endedAt: number): boolean {
  if (event.type === "run_end") return event.at - event.summary.durationMs > endedAt;
  if (event.call !== 1) return false;
  if (event.type === "call") return event.at - event.durationMs > endedAt;
  return event.input !== undefined && event.at - event.input.elapsedMs > endedAt;
}

/** Replays runs as their events come: a run's events are held until its `run_end`. */
export class ReplayTally {
  private readonly open = new Map<string, GovernorEvent[]>();
  /** Runs already replayed, the most recent {@link MAX_ENDED}, with the time of their end. */
  private readonly ended = new Map<string, number>();
  private readonly changes: ReplayChange[] = [];
  private readonly runDetails: RunDetail[] = [];
  private readonly counts = {
    decisions: 0,
    runs: 0,
    changed: 0,
    stoppedEarlier: 0,
    stoppedLater: 0,
    diverged: 0,
    unreplayable: 0,
    callsSaved: 0,
    callsAdded: 0,
  };

  constructor(private readonly policy: Policy) {}

  add(event: GovernorEvent): void {
    const endedAt = this.ended.get(event.runId);
    if (endedAt !== undefined) {
      // Calls that find their run already stopped, or were in flight when it stopped, log after
      // its `run_end`: nothing to re-decide. A later run may reuse the id (RunOptions.runId).
      if (!startsRunAfter(event, endedAt)) return;
      this.ended.delete(event.runId);
    }
    if (event.type !== "run_end") {
      const events = this.open.get(event.runId);
      if (events === undefined) this.open.set(event.runId, [event]);
      else events.push(event);
      return;
    }
    const events = this.open.get(event.runId) ?? [];
    this.open.delete(event.runId);
    this.ended.set(event.runId, event.at);
    if (this.ended.size > MAX_ENDED) {
      const oldest = this.ended.keys().next().value;
      if (oldest !== undefined) this.ended.delete(oldest);
    }
    const { changes, decisions, ...detail } = replayRun(event.runId, events, event, this.policy);
    const counts = this.counts;
    counts.runs += 1;
    counts.decisions += decisions;
    this.changes.push(...changes);
    if (detail.unreplayable !== undefined) counts.unreplayable += 1;
    else if (detail.effect === "stopped_earlier") counts.stoppedEarlier += 1;
    else if (detail.effect === "stopped_later") counts.stoppedLater += 1;
    else if (detail.effect === "diverged") counts.diverged += 1;
    const changed =
      detail.unreplayable === undefined && (detail.effect !== "same" || changes.length > 0);
    if (changed) counts.changed += 1;
    if (changed || detail.unreplayable !== undefined) this.runDetails.push(detail);
    counts.callsSaved += detail.callsSaved;
    counts.callsAdded += detail.callsAdded;
  }

  result(): ReplayReport {
    const { counts } = this;
    return {
      decisions: { total: counts.decisions, changed: this.changes.length },
      runs: {
        total: counts.runs,
        changed: counts.changed,
        stoppedEarlier: counts.stoppedEarlier,
        stoppedLater: counts.stoppedLater,
        diverged: counts.diverged,
        unreplayable: counts.unreplayable,
        open: this.open.size,
      },
      callsSaved: counts.callsSaved,
      callsAdded: counts.callsAdded,
      changes: [...this.changes],
      runDetails: [...this.runDetails],
    };
  }
}

/**
 * Re-decides every run of an event log under `policy`, reading the log line by line: a run's
 * events are held until its `run_end`, so memory grows with the runs open at once, not with the
 * log.
 */
export async function replayEventLines(
  lines: AsyncIterable<string> | Iterable<string>,
  policy: Policy,
  options: ReplayLinesOptions = {},
): Promise<ReplayReport> {
  const tally = new ReplayTally(policy);
  let n = 0;
  for await (const line of lines) {
    n += 1;
    const parsed = parseEventLine(line);
    if (parsed === undefined) continue;
    if ("error" in parsed) options.onError?.(`line ${n}: ${parsed.error}`);
    else tally.add(parsed);
  }
  return tally.result();
}
