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
  const open = new Map<string, GovernorEvent[]>();
  const changes: ReplayChange[] = [];
  const runDetails: RunDetail[] = [];
  const counts = {
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
  let n = 0;
  for await (const line of lines) {
    n += 1;
    const parsed = parseEventLine(line);
    if (parsed === undefined) continue;
    if ("error" in parsed) {
      options.onError?.(`line ${n}: ${parsed.error}`);
      continue;
    }
    if (parsed.type !== "run_end") {
      const events = open.get(parsed.runId);
      if (events === undefined) open.set(parsed.runId, [parsed]);
      else events.push(parsed);
      continue;
    }
    const events = open.get(parsed.runId) ?? [];
    open.delete(parsed.runId);
    const {
      changes: runChanges,
      decisions,
      ...detail
    } = replayRun(parsed.runId, events, parsed, policy);
    counts.runs += 1;
    counts.decisions += decisions;
    changes.push(...runChanges);
    if (detail.unreplayable !== undefined) counts.unreplayable += 1;
    else if (detail.effect === "stopped_earlier") counts.stoppedEarlier += 1;
    else if (detail.effect === "stopped_later") counts.stoppedLater += 1;
    else if (detail.effect === "diverged") counts.diverged += 1;
    const changed =
      detail.unreplayable === undefined && (detail.effect !== "same" || runChanges.length > 0);
    if (changed) counts.changed += 1;
    if (changed || detail.unreplayable !== undefined) runDetails.push(detail);
    counts.callsSaved += detail.callsSaved;
    counts.callsAdded += detail.callsAdded;
  }
  return {
    decisions: { total: counts.decisions, changed: changes.length },
    runs: {
      total: counts.runs,
      changed: counts.changed,
      stoppedEarlier: counts.stoppedEarlier,
      stoppedLater: counts.stoppedLater,
      diverged: counts.diverged,
      unreplayable: counts.unreplayable,
      open: open.size,
    },
    callsSaved: counts.callsSaved,
    callsAdded: counts.callsAdded,
    changes,
    runDetails,
  };
}
