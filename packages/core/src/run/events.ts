// A call's decisions and outcome as counts (the summary) and as events (built only when something
// listens).
import type { Classification } from "../judge/classify.ts";
import type { Decision } from "../judge/decide.ts";
import type { Failure } from "../judge/failure.ts";
import {
  type CallOutcomeKind,
  type DecisionEvent,
  EVENT_SCHEMA_VERSION,
} from "../telemetry/events.ts";
import { effectHints, recordedEvidence, recordedFailure } from "../telemetry/recorded-failure.ts";
import { type CallState, callHashOf, observe } from "./call-state.ts";

/** Emits the call's `call` event when something listens (only its count, when only the metrics do). */
export function emitCall(state: CallState, outcome: CallOutcomeKind, failed = false): void {
  const { core, id } = state.run;
  core.tracing?.callOutcome(state, outcome, failed);
  if (!core.listening) return;
  if (core.callMetric !== undefined) {
    // `failed`: an observe-only call whose failure passed through as `ok` (the event path learns
    // it from the call's observed decision).
    core.callMetric(state.call.tool, state.call.server, outcome, failed);
    return;
  }
  core.emit({
    v: EVENT_SCHEMA_VERSION,
    type: "call",
    at: core.now(),
    runId: id,
    tool: state.call.tool,
    ...(state.call.server !== undefined && { server: state.call.server }),
    call: state.seq,
    callHash: callHashOf(state),
    outcome,
    attempts: state.attempts,
    durationMs: core.now() - state.started,
  });
}

/** Records a decision in counters and events. */
export function record(
  state: CallState,
  failure: Failure,
  c: Classification,
  d: Decision,
  print: string,
  counted = true,
  isFailure = true,
  retryBudgetEmpty = false,
): void {
  const r = state.run;
  const { core } = r;
  const text = observe(failure.text, state);
  if (counted) {
    r.tally.decision(d.action, print, { tool: state.call.tool, reason: c.reason, text }, isFailure);
  }
  // Spans are made from the decision event: the tracing reads it as a listener would.
  const traced = core.tracing?.traces(state) === true;
  if (!core.listening && !traced) return;
  const now = core.now();
  const event: DecisionEvent = {
    v: EVENT_SCHEMA_VERSION,
    type: "decision",
    at: now,
    runId: r.id,
    tool: state.call.tool,
    ...(state.call.server !== undefined && { server: state.call.server }),
    call: state.seq,
    attempt: state.attempts,
    action: d.action,
    reason: d.reason,
    ...(d.action === "stop" && d.cause !== d.reason && { cause: d.cause }),
    certainty: d.certainty,
    fingerprint: print,
    ...(d.action === "retry_dependency" && { delayMs: d.delayMs }),
    ...(state.key !== undefined && { idempotencyKey: state.key }),
    observed: r.observeOnly,
    ...((d.action === "stop" || d.action === "switch_tool") &&
      d.learned !== undefined && { learned: d.learned }),
    input: {
      callHash: callHashOf(state),
      failure: recordedFailure(failure, text),
      ...(state.call.annotations !== undefined && {
        annotations: effectHints(state.call.annotations),
      }),
      elapsedMs: now - r.startedAt,
      ...(r.options.deadline !== undefined && { hostDeadlineMs: r.options.deadline - now }),
      ...(state.verified !== undefined && { verified: state.verified }),
      ...(retryBudgetEmpty && { retryBudgetEmpty: true as const }),
      ...(state.learned !== undefined && { learned: state.learned }),
      ...(c.evidence !== undefined && { evidence: recordedEvidence(c.evidence) }),
    },
  };
  if (core.listening) core.emit(event);
  if (traced) core.tracing?.decision(state, event);
}
