import type { BudgetName } from "../judge/decide.ts";
import type { RunSummary } from "../telemetry/events.ts";
import { ACTIONS, type Action, PERSON_RESOLVABLE, type Reason } from "../types.ts";

/** Why a run stopped, once it has. */
export interface StopState {
  readonly reason: Reason;
  readonly budget?: BudgetName;
  readonly personResolvable: boolean;
}

/**
 * A run's counts (attempts, retries, failures, actions, fingerprints, the last failure) and why it
 * stopped, and the summary made of them. Plain bookkeeping: no clock, no I/O.
 */
export interface RunTally {
  /** Why the run stopped; undefined while it has not. */
  readonly stopped: StopState | undefined;
  /** An attempt was sent. */
  attempt(): void;
  /** A dependency retry was decided. */
  retry(): void;
  /** A stop decided before any failure (a loop, a budget, an abort): counted once. */
  stopBeforeFailure(): void;
  /** A decision on a failure, counted: its action, its fingerprint and the failure as the model reads it. */
  decision(
    action: Action,
    fingerprint: string,
    last: NonNullable<RunSummary["lastFailure"]>,
    isFailure: boolean,
  ): void;
  /** The first stop wins: later ones leave the reason as it is. */
  stop(reason: Reason, budget?: BudgetName, personResolvable?: boolean): void;
  /** The summary now. */
  summary(runId: string, calls: number, durationMs: number, observeOnly: boolean): RunSummary;
}

/** Creates an empty tally. */
export function createRunTally(): RunTally {
  const actions = Object.fromEntries(ACTIONS.map((a) => [a, 0])) as Record<Action, number>;
  const fingerprints: Record<string, number> = {};
  let attempts = 0;
  let retries = 0;
  let failures = 0;
  let lastFailure: RunSummary["lastFailure"];
  let stopped: StopState | undefined;
  return {
    get stopped() {
      return stopped;
    },
    attempt() {
      attempts += 1;
    },
    retry() {
      retries += 1;
    },
    stopBeforeFailure() {
      actions.stop += 1;
    },
    decision(action, fingerprint, last, isFailure) {
      if (isFailure) failures += 1;
      fingerprints[fingerprint] = (fingerprints[fingerprint] ?? 0) + 1;
      actions[action] += 1;
      lastFailure = last;
    },
    stop(reason, budget, personResolvable) {
      if (stopped) return;
      stopped = {
        reason,
        ...(budget !== undefined && { budget }),
        personResolvable: personResolvable ?? PERSON_RESOLVABLE.has(reason),
      };
    },
    summary(runId, calls, durationMs, observeOnly) {
      return {
        runId,
        reason: stopped?.reason ?? "completed",
        ...(stopped?.budget !== undefined && { budget: stopped.budget }),
        personResolvable: stopped?.personResolvable ?? false,
        calls,
        attempts,
        actions: { ...actions },
        retries,
        failures,
        fingerprints: { ...fingerprints },
        durationMs,
        ...(lastFailure !== undefined && { lastFailure }),
        observeOnly,
      };
    },
  };
}
