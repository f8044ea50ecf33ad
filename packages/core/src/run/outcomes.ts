// The outcomes a call ends with besides a success: stops (which end the run) and their text for
// the model.
import type { HostError } from "../errors.ts";
import type { BudgetName, Decision } from "../judge/decide.ts";
import { composeMessage, notMadeText } from "../judge/message.ts";
import { REASON_INFO } from "../reasons.ts";
import type { CallOutcomeKind } from "../telemetry/events.ts";
import { PERSON_RESOLVABLE, type Reason } from "../types.ts";
import type { CallState } from "./call-state.ts";
import { emitCall } from "./events.ts";
import { stopRun, summary } from "./run-state.ts";
import type { CallOutcome, ModelResult } from "./types.ts";

export type StopDecision = Extract<Decision, { action: "stop" }>;

export function modelResult(text: string): ModelResult {
  return { content: [{ type: "text", text }], isError: true };
}

export function plainStop(reason: Reason, budget?: BudgetName): StopDecision {
  return {
    action: "stop",
    reason,
    certainty: "not_sent",
    cause: reason,
    ...(budget !== undefined && { budget }),
    personResolvable: PERSON_RESOLVABLE.has(reason),
  };
}

/** A stop: ends the run and gives the model its final text. */
export function stopOutcome<T>(
  state: CallState,
  decision: StopDecision,
  observation: string,
  extra: {
    hostError?: HostError;
    repeats?: number;
    emit?: CallOutcomeKind;
    /** The decision was recorded (counted in `actions`) already. */
    recorded?: boolean;
    /**
     * The decision is the run's, taken by a parallel call: its `uncertain_mutation` speaks of
     * that call's write, so this call names its key only if an attempt of its own may have written.
     */
    inherited?: boolean;
    /** The model's text, when the decision's own would speak of another call's write. */
    text?: string;
  } = {},
): CallOutcome<T> {
  const r = state.run;
  // A stop made before any failure (a loop, a budget, an abort) still counts as a stop, once:
  // calls that only find the run already stopped do not count again.
  if (!extra.recorded && !r.ended && !r.observeOnly) r.tally.stopBeforeFailure();
  // A write that may have happened names its key (whatever stopped it), and a key a person is
  // asked to settle is never settled by the run's end.
  const uncertainKey =
    (decision.reason === "uncertain_mutation" && !extra.inherited) || state.uncertain
      ? state.key
      : undefined;
  if (uncertainKey !== undefined) r.settledAtEnd?.delete(uncertainKey);
  emitCall(state, extra.emit ?? "stop");
  if (!r.observeOnly) stopRun(r, decision.reason, decision.budget, decision.personResolvable);
  const text =
    extra.text ??
    composeMessage({
      tool: state.call.tool,
      observation,
      decision,
      attempts: state.attempts,
      maxRepeats: state.tool.maxRepeats,
      ...(extra.repeats !== undefined && { repeats: extra.repeats }),
    });
  return {
    kind: "stop",
    reason: decision.reason,
    personResolvable: decision.personResolvable,
    result: modelResult(text),
    summary: summary(r),
    ...(extra.hostError !== undefined && { hostError: extra.hostError }),
    ...(uncertainKey !== undefined && { idempotencyKey: uncertainKey }),
  };
}

/**
 * A stop before an attempt was sent (budgets, deadline, abort, approval, loops): the call was not
 * made, unless an earlier attempt of it may have written (a retry cut during its backoff).
 */
export function preflightStop<T>(
  state: CallState,
  reason: Reason,
  budget?: BudgetName,
): CallOutcome<T> {
  return stopOutcome<T>(
    state,
    plainStop(reason, budget),
    state.uncertain
      ? "an earlier attempt of this write may have taken effect"
      : "the call was not made",
  );
}

/**
 * The answer for a call that finds the run already ended (a parallel call stopped it). It ends
 * with the run's reason (counted as the run's), but its text and key are its own: a write left
 * uncertain by an attempt of this call names its key and says so, whatever stopped the run; a
 * call not sent names no key and says it was not made (or, when an attempt of it failed before
 * without effect, that it failed and was not tried again), not the advice of a write that was
 * not its own (another call's in doubt, or half done).
 */
export function endedOutcome<T>(
  state: CallState,
  /** An attempt of the call failed before (made, without effect); one cut unsent does not count. */
  failed = state.attempts > 0,
): CallOutcome<T> {
  const s = summary(state.run);
  const reason: Reason = s.reason === "completed" ? "aborted" : s.reason;
  const decision = plainStop(reason, s.budget);
  if (state.uncertain) {
    return stopOutcome<T>(
      state,
      decision,
      "the run has already ended; an earlier attempt of this write may have taken effect",
      { inherited: true },
    );
  }
  // An attempt made before (its failure left no doubt): the call was made, its retry was not.
  return stopOutcome<T>(
    state,
    decision,
    failed
      ? "the call failed and was not tried again: the run had already ended"
      : "the call was not made: the run had already ended",
    {
      inherited: true,
      ...(REASON_INFO[reason].aboutWrite && { text: notMadeText(state.call.tool, failed) }),
    },
  );
}
