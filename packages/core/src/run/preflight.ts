// Before anything is sent: the run's state, the deadline, access and approval, the loop detector,
// the breaker, and the calls budget. Synchronous when the store is.
import type { Classification } from "../judge/classify.ts";
import type { BudgetName } from "../judge/decide.ts";
import { fingerprint } from "../judge/fingerprint.ts";
import { composeMessage } from "../judge/message.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { type BreakerState, breakerCheck } from "./breaker.ts";
import { readBreaker } from "./breaker-steps.ts";
import type { CallState } from "./call-state.ts";
import { bounded, isAborted } from "./cuts.ts";
import { commit } from "./decisions.ts";
import { emitCall, record } from "./events.ts";
import { endedOutcome, modelResult, plainStop, preflightStop, stopOutcome } from "./outcomes.ts";
import { dropClock, modelRepeatsOf, shareClock } from "./run-state.ts";
import { isThenable, step } from "./store-guard.ts";
import { storeOp, storeTrouble } from "./store-steps.ts";
import type { CallOutcome } from "./types.ts";

/** Fingerprints of refusals, by reason, then tool: at most this many tools per reason. */
const MAX_LOCAL_PRINTS = 1024;
const localPrints = new Map<Reason, Map<string, string>>();

/**
 * The fingerprint of a refusal for a reason (its text) by a tool, remembered: the judge remembers
 * a text's fingerprint for its last tool only, and an open breaker refuses calls of every tool.
 */
function localPrint(tool: string, reason: Reason): string {
  let byTool = localPrints.get(reason);
  if (byTool === undefined) {
    byTool = new Map();
    localPrints.set(reason, byTool);
  }
  let print = byTool.get(tool);
  if (print === undefined) {
    print = fingerprint({ tool, channel: "local", text: reason });
    if (byTool.size >= MAX_LOCAL_PRINTS) byTool.clear();
    byTool.set(tool, print);
  }
  return print;
}

/** Budgets, access, loops and breakers, before anything is sent; synchronous when the store is. */
export function preflight(state: CallState): MaybePromise<CallOutcome<unknown> | undefined> {
  const { deadline, observeOnly } = state.run;
  if (isAborted(state)) return refuse(state, "aborted");
  if (shareClock(state.run, state) >= deadline)
    return refuse(state, "budget_exhausted", "wallTime");
  const { tool } = state;
  if (tool.access === "deny") {
    return preflightModel(state, "switch_tool", "denied_by_policy", "this tool is not allowed");
  }
  if (tool.access === "confirm" && !observeOnly) return confirmed(state);
  return loopsAndBreaker(state);
}

/** A preflight refusal; observe-only reports what would have stopped the call, and lets it go. */
function refuse(
  state: CallState,
  reason: Reason,
  budget?: BudgetName,
): CallOutcome<unknown> | undefined {
  const { observeOnly } = state.run;
  if (!observeOnly) return preflightStop(state, reason, budget);
  // Observe-only: what would have stopped the call is reported, not enforced or counted.
  const d = plainStop(reason, budget);
  const c: Classification = { action: "stop", reason, certainty: "not_sent", source: "signal" };
  const print = localPrint(state.call.tool, reason);
  record(state, { channel: "local", origin: "local", text: reason }, c, d, print, false);
  return undefined;
}

/** A tool marked `confirm`: the host approves the call, or it is refused. */
async function confirmed(state: CallState): Promise<CallOutcome<unknown> | undefined> {
  const { core, id } = state.run;
  const confirm = core.options.onConfirm;
  const approved = confirm
    ? await bounded(
        state,
        () =>
          confirm({
            runId: id,
            tool: state.call.tool,
            server: state.call.server,
            args: state.call.args ?? {},
            effect: state.effect,
          }),
        false,
      )
    : false;
  if (isAborted(state)) return refuse(state, "aborted");
  if (approved !== true) return refuse(state, "not_approved");
  return await loopsAndBreaker(state);
}

/** The loop detector, then the breaker (one probe per cool-down when it is half-open). */
function loopsAndBreaker(state: CallState): MaybePromise<CallOutcome<unknown> | undefined> {
  const { tool } = state;
  const { call } = state;
  const seen = state.run.identical.count(state.loopKey, call.tool, call.server);
  if (!tool.loop.exempt && seen > 0 && seen >= tool.loop.maxIdentical) {
    return refuse(state, "loop_detected");
  }
  let breaker: MaybePromise<BreakerState | undefined>;
  try {
    breaker = storeOp(state, "a breaker read", readBreaker);
  } catch (error) {
    return breakerTrouble(state, error);
  }
  // A host's store answering at once may still have taken time (its own code ran): the attempt's
  // admission reads the clock again rather than take preflight's reading.
  if (state.run.core.ownStore !== true) dropClock(state.run);
  return isThenable(breaker) ? breakerLater(state, breaker) : afterBreakerRead(state, breaker);
}

// The closures of a step that may wait live in functions of their own: a function whose
// parameters a closure captures makes a context on every call, even when it makes no closure.

/** A breaker read the store answers later. */
function breakerLater(
  state: CallState,
  pending: Promise<BreakerState | undefined>,
): Promise<CallOutcome<unknown> | undefined> {
  return pending.then(
    (answer) => afterBreakerRead(state, answer),
    (error: unknown) => breakerTrouble(state, error),
  );
}

/** The store failed in a breaker step: observe-only sends calls untouched; otherwise fail closed. */
function breakerTrouble(state: CallState, error: unknown) {
  return state.run.observeOnly ? admit(state, false) : storeTrouble(state, error, "not_sent");
}

/** The breaker's verdict: closed or open, or one probe per cool-down, across parallel calls and workers. */
function afterBreakerRead(
  state: CallState,
  breaker: BreakerState | undefined,
): MaybePromise<CallOutcome<unknown> | undefined> {
  // No state: closed, with no clock read.
  if (breaker?.openedAt === undefined) return admit(state, false);
  const check = breakerCheck(breaker, state.tool.breaker, state.run.core.now());
  if (check.verdict !== "probe") return admit(state, check.verdict === "open");
  return probe(state, breaker.openedAt);
}

/**
 * A half-open breaker: one probe per cool-down, across parallel calls and workers (the store's
 * atomic counter lets exactly one caller through).
 */
function probe(state: CallState, openedAt: number): MaybePromise<CallOutcome<unknown> | undefined> {
  const { core } = state.run;
  const { tool } = state;
  const period = Math.floor((core.now() - openedAt) / Math.max(1, tool.breaker.cooldownMs));
  const gate = `${core.breakerKey(tool.tool, tool.server)}:probe:${openedAt}:${period}`;
  const ttl = Math.max(1, tool.breaker.cooldownMs);
  return step(
    () => storeOp(state, "a breaker probe", () => core.store.increment(gate, 1, ttl)),
    (taken) => admit(state, taken > 1),
    (error) => breakerTrouble(state, error),
  );
}

/**
 * The last preflight step, synchronous: a run that stopped meanwhile admits nothing, and the
 * calls budget is taken by exactly the calls that go on to execute.
 */
function admit(state: CallState, open: boolean): CallOutcome<unknown> | undefined {
  const r = state.run;
  if (open) {
    return preflightModel(state, "switch_tool", "circuit_open", "the tool is failing and paused");
  }
  if (r.ended && !r.observeOnly) return endedOutcome(state);
  if (isAborted(state)) return refuse(state, "aborted");
  if (!r.budgets.take("calls")) return refuse(state, "budget_exhausted", "calls");
  return undefined;
}

/**
 * A decision for the model made before any attempt (a denied tool, an open breaker, arguments
 * that are not JSON). Nothing failed, so the failures budget is not spent, but the action's own
 * budget and the repeat rule apply.
 */
export function preflightModel(
  state: CallState,
  action: "switch_tool" | "correct_arguments",
  reason: Reason,
  observation: string,
  isFailure = false,
): CallOutcome<unknown> | undefined {
  const r = state.run;
  const { observeOnly } = r;
  const print = localPrint(state.call.tool, reason);
  const classification: Classification = {
    action,
    reason,
    certainty: "not_sent",
    source: "signal",
  };
  const d = commit(state, classification, print, false, isFailure);
  record(
    state,
    { channel: "local", origin: "local", text: observation },
    classification,
    d,
    print,
    true,
    isFailure,
  );
  if (observeOnly) return undefined;
  if (d.action === "stop") {
    return stopOutcome(state, d, observation, {
      repeats: modelRepeatsOf(r, print) ?? 1,
      recorded: true,
    });
  }
  emitCall(state, "model");
  const text = composeMessage({
    tool: state.call.tool,
    observation,
    decision: d,
    repeats: modelRepeatsOf(r, print) ?? 1,
    maxRepeats: state.tool.maxRepeats,
  });
  return {
    kind: "model",
    action,
    reason,
    fingerprint: print,
    result: modelResult(text),
  };
}
