// Preflight (docs/architecture.md §1): before anything is sent, the run's state, the arguments,
// the deadline, access and approval, the loop detector, the breaker, and the calls budget.
import type { Classification } from "../judge/classify.ts";
import type { BudgetName } from "../judge/decide.ts";
import { fingerprint } from "../judge/fingerprint.ts";
import { composeMessage } from "../judge/message.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { type BreakerState, breakerCheck } from "./breaker.ts";
import { readBreaker } from "./breaker-steps.ts";
import { type CallState, observe } from "./call-state.ts";
import { commit } from "./decisions.ts";
import { emitCall, record } from "./events.ts";
import { ask, type Step, type StepAnswer } from "./flow.ts";
import { endedOutcome, modelResult, plainStop, preflightStop, stopOutcome } from "./outcomes.ts";
import { bounded, dropClock, isAborted, modelRepeatsOf, shareClock } from "./run-state.ts";
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

/**
 * Preflight's steps, before anything is sent (a refusal ends the call): the run's end, arguments
 * that are not JSON, budgets, access, loops and the breaker.
 */
export const PREFLIGHT: readonly Step[] = [
  refuseAtOnce,
  askApproval,
  refuseLoop,
  checkBreaker,
  takeCallBudget,
];

/** The run ended, arguments that are not JSON, an abort, the wall time, a tool denied. */
function refuseAtOnce(state: CallState): StepAnswer {
  const r = state.run;
  const { deadline, observeOnly } = r;
  if (r.ended && !observeOnly) return endedOutcome(state);
  if (state.invalidArgs !== undefined) {
    const refused = preflightModel(
      state,
      "correct_arguments",
      "invalid_argument",
      // What reading them threw (a toJSON, a getter, a proxy) is redacted like any failure text.
      `the arguments are not valid JSON (${observe(state.invalidArgs, state)})`,
      true,
    );
    if (refused) return refused;
  }
  if (isAborted(state)) return refuse(state, "aborted");
  if (shareClock(r, state) >= deadline) return refuse(state, "budget_exhausted", "wallTime");
  if (state.tool.access === "deny") {
    return preflightModel(state, "switch_tool", "denied_by_policy", "this tool is not allowed");
  }
  return undefined;
}

/** A tool marked `confirm`: the host approves the call, or it is refused. */
function askApproval(state: CallState): MaybePromise<StepAnswer> {
  const r = state.run;
  if (state.tool.access !== "confirm" || r.observeOnly) return undefined;
  if (r.core.options.onConfirm === undefined) return refuse(state, "not_approved");
  return ask(state, askHost, approval);
}

function askHost(state: CallState): Promise<boolean> {
  const r = state.run;
  const { call } = state;
  const confirm = r.core.options.onConfirm as NonNullable<typeof r.core.options.onConfirm>;
  const request = {
    runId: r.id,
    tool: call.tool,
    server: call.server,
    args: call.args ?? {},
    effect: state.effect,
  };
  return bounded(state, () => confirm(request), false);
}

function approval(state: CallState, approved: boolean): StepAnswer {
  if (isAborted(state)) return refuse(state, "aborted");
  if (approved === true) return undefined;
  // The turn ended by the run's end or its deadline, not by the host's answer: the call ends as
  // the run did, or as one admitted past the deadline, not as a refusal nobody gave.
  const r = state.run;
  if (r.ended !== undefined && !r.observeOnly) return endedOutcome(state);
  if (!r.observeOnly && r.core.now() >= r.deadline) {
    return refuse(state, "budget_exhausted", "wallTime");
  }
  return refuse(state, "not_approved");
}

/** The loop detector: too many identical calls. */
function refuseLoop(state: CallState): StepAnswer {
  const { tool, call } = state;
  const seen = state.run.identical.count(state.loopKey, call.tool, call.server);
  if (!tool.loop.exempt && seen > 0 && seen >= tool.loop.maxIdentical) {
    return refuse(state, "loop_detected");
  }
  return undefined;
}

/**
 * The breaker: closed, open, or one probe per cool-down when it is half-open (the store's atomic
 * counter lets exactly one caller through, across parallel calls and workers). A store that fails
 * here refuses the call (observe-only lets it go).
 */
function checkBreaker(state: CallState): MaybePromise<StepAnswer> {
  return ask(state, readBreakerOf, breakerVerdict, breakerTrouble);
}

function readBreakerOf(state: CallState): MaybePromise<BreakerState | undefined> {
  return storeOp(state, "a breaker read", readBreaker);
}

function breakerVerdict(
  state: CallState,
  breaker: BreakerState | undefined,
): MaybePromise<StepAnswer> {
  const r = state.run;
  const { core } = r;
  // A host's store answering at once may still have taken time (its own code ran): the attempt's
  // admission reads the clock again rather than take preflight's reading.
  if (core.ownStore !== true) dropClock(r);
  // No state: closed, with no clock read.
  if (breaker?.openedAt === undefined) return undefined;
  const { tool } = state;
  const check = breakerCheck(breaker, tool.breaker, core.now());
  if (check.verdict !== "probe") return check.verdict === "open" ? circuitOpen(state) : undefined;
  const { openedAt } = breaker;
  const period = Math.floor((core.now() - openedAt) / Math.max(1, tool.breaker.cooldownMs));
  const gate = `${core.breakerKey(tool.tool, tool.server)}:probe:${openedAt}:${period}`;
  const ttl = Math.max(1, tool.breaker.cooldownMs);
  const takeProbe = (s: CallState) =>
    storeOp(s, "a breaker probe", () => core.store.increment(gate, 1, ttl));
  return ask(state, takeProbe, probeVerdict, breakerTrouble);
}

/** The half-open breaker's probe: the first caller of the period takes it, the others are refused. */
function probeVerdict(state: CallState, taken: number): StepAnswer {
  return taken > 1 ? circuitOpen(state) : undefined;
}

function circuitOpen(state: CallState): StepAnswer {
  return preflightModel(state, "switch_tool", "circuit_open", "the tool is failing and paused");
}

/** Observe-only sends calls untouched; otherwise fail closed. */
function breakerTrouble(state: CallState, error: unknown): MaybePromise<StepAnswer> {
  return state.run.observeOnly ? undefined : storeTrouble(state, error, "not_sent");
}

/**
 * The last step, synchronous: a run that stopped meanwhile admits nothing, and the calls budget
 * is taken by exactly the calls that go on to execute.
 */
function takeCallBudget(state: CallState): MaybePromise<StepAnswer> {
  const r = state.run;
  const { observeOnly } = r;
  if (r.ended && !observeOnly) return endedOutcome(state);
  if (isAborted(state)) return refuse(state, "aborted");
  if (!r.budgets.take("calls")) return refuse(state, "budget_exhausted", "calls");
  // A call the host approved claims its key a turn after its admission: the calls one answer of
  // the host released all pass this step first, so a stop among them (a budget) ends the run
  // before any claims, and a write admitted just before it claims nothing (ledger.ts closedByEnd).
  if (state.tool.access === "confirm" && !observeOnly) return Promise.resolve(undefined);
  return undefined;
}

/** A preflight refusal; observe-only reports what would have stopped the call, and lets it go. */
function refuse(state: CallState, reason: Reason, budget?: BudgetName): StepAnswer {
  const { observeOnly } = state.run;
  if (!observeOnly) return preflightStop(state, reason, budget);
  // Observe-only: what would have stopped the call is reported, not enforced or counted.
  const d = plainStop(reason, budget);
  const c: Classification = { action: "stop", reason, certainty: "not_sent", source: "signal" };
  const print = localPrint(state.call.tool, reason);
  record(state, { channel: "local", origin: "local", text: reason }, c, d, print, false);
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
  // The run ended while a step before awaited the store (the breaker's probe): its end answers.
  if (d === undefined) return endedOutcome(state);
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
