import type { BudgetName } from "../judge/decide.ts";
import type { RunSummary } from "../telemetry/events.ts";
import { type Action, PERSON_RESOLVABLE, type Reason } from "../types.ts";
import { PrintCounts } from "./print-counts.ts";

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
  return new Tally();
}

/**
 * A class, not a closure per counter: a run makes one at its start, so its cost is every run's
 * (a fresh run that fails once pays it in full).
 */
class Tally implements RunTally {
  // In the order of ACTIONS (the summary's key order).
  readonly #actions: Record<Action, number> = {
    correct_arguments: 0,
    retry_dependency: 0,
    switch_tool: 0,
    stop: 0,
    host: 0,
  };
  /** Made at the first decision: a run whose calls all succeed has none. */
  #fingerprints: PrintCounts | undefined;
  #attempts = 0;
  #retries = 0;
  #failures = 0;
  #lastFailure: RunSummary["lastFailure"];
  #stopped: StopState | undefined;

  get stopped(): StopState | undefined {
    return this.#stopped;
  }

  attempt(): void {
    this.#attempts += 1;
  }

  retry(): void {
    this.#retries += 1;
  }

  stopBeforeFailure(): void {
    this.#actions.stop += 1;
  }

  decision(
    action: Action,
    fingerprint: string,
    last: NonNullable<RunSummary["lastFailure"]>,
    isFailure: boolean,
  ): void {
    if (isFailure) this.#failures += 1;
    this.#fingerprints ??= new PrintCounts();
    this.#fingerprints.add(fingerprint);
    this.#actions[action] += 1;
    this.#lastFailure = last;
  }

  stop(reason: Reason, budget?: BudgetName, personResolvable?: boolean): void {
    if (this.#stopped) return;
    this.#stopped = {
      reason,
      ...(budget !== undefined && { budget }),
      personResolvable: personResolvable ?? PERSON_RESOLVABLE.has(reason),
    };
  }

  summary(runId: string, calls: number, durationMs: number, observeOnly: boolean): RunSummary {
    const stopped = this.#stopped;
    const lastFailure = this.#lastFailure;
    const reason = stopped?.reason ?? "completed";
    const personResolvable = stopped?.personResolvable ?? false;
    const attempts = this.#attempts;
    const actions = { ...this.#actions };
    const retries = this.#retries;
    const failures = this.#failures;
    const fingerprints = this.#fingerprints === undefined ? {} : this.#fingerprints.toRecord();
    // Literals without spreads where no budget is named (one object of its final shape, made at
    // once); the keys in the same order in every form.
    if (stopped?.budget === undefined) {
      return lastFailure === undefined
        ? {
            runId,
            reason,
            personResolvable,
            calls,
            attempts,
            actions,
            retries,
            failures,
            fingerprints,
            durationMs,
            observeOnly,
          }
        : {
            runId,
            reason,
            personResolvable,
            calls,
            attempts,
            actions,
            retries,
            failures,
            fingerprints,
            durationMs,
            lastFailure,
            observeOnly,
          };
    }
    return {
      runId,
      reason,
      budget: stopped.budget,
      personResolvable,
      calls,
      attempts,
      actions,
      retries,
      failures,
      fingerprints,
      durationMs,
      ...(lastFailure !== undefined && { lastFailure }),
      observeOnly,
    };
  }
}
