// A run: one agent task's calls under one set of budgets, until it stops or the host ends it.
// One call's flow is call.ts (docs/architecture.md §1), its steps in preflight.ts, attempts.ts
// (the attempt loop), failed-attempt.ts, ledger.ts, events.ts, outcomes.ts; the run's state in
// run-state.ts and the call's in call-state.ts.

import { GovernorError } from "../errors.ts";
import type { RunSummary } from "../telemetry/events.ts";
import { runCall } from "./call.ts";
import type { GovernorCore } from "./hooks.ts";
import { keepAnswer } from "./kept-answer.ts";
import { createRunState, endByHost, type RunState, runOverSignal, summary } from "./run-state.ts";
import type { CallOutcome, Executor, Run, RunOptions, ToolCall } from "./types.ts";

export {
  type AttemptContext,
  type CallOutcome,
  type Executor,
  IDEMPOTENCY_META_KEY,
  type ModelResult,
  type Run,
  type RunOptions,
  type ToolCall,
} from "./types.ts";

/** How long `keepAnswer` gives an answer by default. */
const TEN_MINUTES = 600_000;

/**
 * Creates a run, going on from `from` when given (`RunOptions.continues`, checked by the caller).
 * Internal: use `governor.startRun()`.
 */
export function createRun(core: GovernorCore, options: RunOptions, from?: RunState): Run {
  const state = createRunState(core, options, from);
  core.tracing?.runStarted(state);
  return new GovernedRun(state);
}

/** The state of a run `createRun` made (see `GovernedRun.stateOf`), else undefined. */
export function stateOfRun(value: unknown): RunState | undefined {
  return GovernedRun.stateOf(value);
}

/**
 * A run as the host holds it. A class: every run makes one, and an object literal with a getter
 * (`ended`) and a closure per method cost about ten times as much to make. Its methods are called
 * on the run (`run.call(...)`), as the `Run` interface declares them.
 */
class GovernedRun implements Run {
  readonly id: string;
  readonly #r: RunState;

  constructor(r: RunState) {
    this.#r = r;
    this.id = r.id;
  }

  /**
   * The state of a run this module made, else undefined: a value that only looks like a run has
   * no budgets or counts a run could go on from.
   */
  static stateOf(value: unknown): RunState | undefined {
    return typeof value === "object" && value !== null && #r in value
      ? (value as GovernedRun).#r
      : undefined;
  }

  get ended(): boolean {
    return this.#r.ended !== undefined;
  }

  get signal(): AbortSignal {
    return runOverSignal(this.#r);
  }

  call<T>(request: ToolCall, execute: Executor<T>): Promise<CallOutcome<T>> {
    return runCall(this.#r, request, execute);
  }

  keepAnswer(request: ToolCall, answer: unknown, ttlMs = TEN_MINUTES): Promise<boolean> {
    if (typeof ttlMs !== "number" || !(ttlMs > 0) || !Number.isFinite(ttlMs)) {
      return Promise.reject(
        new GovernorError(
          "invalid_options",
          `keepAnswer: ttlMs must be a positive finite number of ms, got ${String(ttlMs)}.`,
        ),
      );
    }
    return keepAnswer(this.#r, request, answer, ttlMs);
  }

  end(): RunSummary {
    return endByHost(this.#r);
  }

  summary(): RunSummary {
    return summary(this.#r);
  }
}
