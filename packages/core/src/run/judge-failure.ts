// Judging a failed attempt: the ledger and breaker told, the host and the verify step asked, then
// the decision taken and spent in one synchronous step, and its outcome for the model.
import { HostError } from "../errors.ts";
import { type Classification, classify } from "../judge/classify.ts";
import { type Decision, safeToRepeat } from "../judge/decide.ts";
import { type Failure, failureFromError, localFailure } from "../judge/failure.ts";
import { fingerprintOf } from "../judge/fingerprint.ts";
import { learningScopeOf } from "../judge/learned.ts";
import { composeMessage } from "../judge/message.ts";
import { breakerCounts } from "../reasons.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { updateBreaker } from "./breaker-steps.ts";
import { type CallState, keyed, noteFailure, noteSuccess, observe } from "./call-state.ts";
import { Escape, RetryRequest } from "./control.ts";
import { bounded, isAborted, wakers } from "./cuts.ts";
import { commit, decideNow } from "./decisions.ts";
import { doubtKeyOf } from "./doubt.ts";
import { emitCall, record } from "./events.ts";
import type { HostResolution, VerifyResult } from "./hooks.ts";
import { settle, unsentAs } from "./ledger.ts";
import { OutcomeTracker, type StoreGuard } from "./outcome-tracker.ts";
import { endedOutcome, modelResult, plainStop, stopOutcome } from "./outcomes.ts";
import { addReleasable, modelRepeatsOf, stopRun, summary } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import { hostContext, storeOp, storeTrouble } from "./store-steps.ts";
import type { CallOutcome } from "./types.ts";
import { guarded, guardedAsync, MAX_TIMER_MS } from "./waits.ts";

/** What judging one failure carries from one step to the next. */
interface Judging<T> {
  readonly state: CallState;
  readonly failure: Failure;
  readonly outcome: { value: T } | { thrown: unknown };
  /** The classification; the host's hook may change its action. */
  c: Classification;
  readonly print: string;
  hostError: HostError | undefined;
  /** The learning tracker's store operations, made on first use. */
  guard: StoreGuard | undefined;
}

type Judged<T> = MaybePromise<CallOutcome<T> | RetryRequest>;

/**
 * Judges a failed attempt. Everything that awaits (ledger, breaker, host hook, verify, what was
 * learned) happens first; the decision and the budgets it spends are then taken in one
 * synchronous step, so parallel calls of the run can never overshoot a budget or miss a repeat.
 * Each step goes on at once when the store answered with a value: with the memory store, a
 * failure is judged without a promise (a throw is the caller's to catch, as a rejection would be).
 */
export function judge<T>(
  state: CallState,
  failure: Failure,
  outcome: { value: T } | { thrown: unknown },
): Judged<T> {
  const classified = classify(failure, state.tool, state.call);
  // An earlier attempt may have written: so may the call, whatever this attempt came to.
  const c =
    state.uncertain && classified.certainty !== "unknown"
      ? { ...classified, certainty: "unknown" as const }
      : classified;
  const print = fingerprintOf(state.call.tool, failure.channel, failure.code, failure.text);
  const j: Judging<T> = {
    state,
    failure,
    outcome,
    c,
    print,
    hostError: undefined,
    guard: undefined,
  };
  if (state.key === undefined) return afterSettle(j);
  if (c.certainty === "unknown") state.uncertain = true;
  let settled: MaybePromise<void>;
  try {
    settled = settle(
      state,
      state.key,
      c.certainty === "unknown"
        ? "uncertain"
        : c.certainty === "not_sent"
          ? unsentAs(state)
          : "failed",
    );
  } catch (error) {
    // Unrecorded, the entry stays pending and then counts as uncertain: nothing is retried.
    return storeTrouble(state, error, c.certainty);
  }
  if (isThenable(settled)) {
    return settled.then(
      () => afterSettle(j),
      (error: unknown) => storeTrouble<T>(state, error, c.certainty),
    );
  }
  return afterSettle(j);
}

/** The breaker told of a failure of the dependency, then the host asked. */
function afterSettle<T>(j: Judging<T>): Judged<T> {
  const { c } = j;
  if (breakerCounts(c.action, c.reason)) {
    const updated = updateBreaker(j.state, "failure");
    if (isThenable(updated)) return updated.then(() => askHost(j));
  }
  return askHost(j);
}

/** Failures only the host can handle: it decides before anything reaches the model. */
function askHost<T>(j: Judging<T>): Judged<T> {
  const { state, failure, c, print } = j;
  const r = state.run;
  if (c.action !== "host" || r.observeOnly) return askVerify(j);
  const hostError = new HostError({
    tool: state.call.tool,
    server: state.call.server,
    reason: c.reason,
    channel: failure.channel,
    failureCode: failure.code,
    certainty: c.certainty,
    idempotencyKey: state.uncertain ? state.key : undefined,
    // Host-facing text is logged: redacted like the model's (the raw error stays in cause).
    message: `${state.call.tool}: ${observe(failure.text, state)}`,
    cause: failure.raw,
  });
  j.hostError = hostError;
  const hook = r.core.options.onHostError;
  if (!hook) {
    r.budgets.take("failures");
    const d: Decision = { action: "host", reason: c.reason, certainty: c.certainty };
    record(state, failure, c, d, print);
    emitCall(state, "host");
    stopRun(r, c.reason);
    throw new Escape(hostError);
  }
  return bounded<HostResolution | undefined>(
    state,
    () =>
      hook(hostError, hostContext(state, safeToRepeat(c.certainty, state.effect, keyed(state)))),
    undefined,
  ).then((resolution) => {
    // A retry the host asks for is a dependency retry like any other: capped, backed off,
    // budgeted, and only when repeating is safe.
    if (resolution?.action === "retry") j.c = { ...j.c, action: "retry_dependency" };
    if (resolution?.action === "correct_arguments") {
      j.c = { ...j.c, action: "correct_arguments", reason: "invalid_argument" };
    }
    return askVerify(j);
  });
}

/** The verify step, asked when only it can make a retry safe. */
function askVerify<T>(j: Judging<T>): Judged<T> {
  const { state } = j;
  if (!state.run.observeOnly && state.verified === undefined && uncertainMutation(j)) {
    return verifyThenDecide(j);
  }
  return readLearned(j);
}

/**
 * Whether the decision on the run's state now is the `uncertain_mutation` stop. Only a retry can
 * become one, or a stop for that reason: any other action is decided without one (and without a
 * random draw, which only a retry's backoff makes), so only a retry is decided here.
 */
function uncertainMutation<T>(j: Judging<T>): boolean {
  const { c } = j;
  if (c.action === "stop") return c.reason === "uncertain_mutation";
  if (c.action !== "retry_dependency") return false;
  const tentative = decideNow(j.state, c, j.print);
  return tentative.action === "stop" && tentative.reason === "uncertain_mutation";
}

async function verifyThenDecide<T>(j: Judging<T>): Promise<CallOutcome<T> | RetryRequest> {
  const { state } = j;
  const verdict = await runVerify(state);
  if (verdict?.effect === "present") {
    if (state.key !== undefined) {
      const { key } = state;
      // The write is known done; if the store cannot record it, the entry stays pending
      // (uncertain after its lease): a repeat is refused, never re-run.
      await guardedAsync(() => settle(state, key, "succeeded", verdict.result));
    }
    // The verified write is a success: the next identical call is a new logical call.
    noteSuccess(state);
    emitCall(state, "replayed");
    return {
      kind: "ok",
      value: verdict.result as T,
      attempts: state.attempts,
      replayed: true,
    };
  }
  if (verdict) state.verified = verdict.effect;
  // No effect: no attempt so far wrote.
  if (verdict?.effect === "absent") state.uncertain = false;
  if (verdict?.effect === "absent" && state.key !== undefined) {
    try {
      await settle(state, state.key, "failed");
    } catch (error) {
      // The verify step found no effect: the write did not happen, whatever this attempt said.
      return storeTrouble(state, error, "failed");
    }
  }
  return await readLearned(j);
}

/**
 * What was learned of this failure, read before the decision (then the synchronous
 * decide-and-spend step). A store that cannot answer reads as nothing learned.
 */
function readLearned<T>(j: Judging<T>): Judged<T> {
  const { state, c } = j;
  const r = state.run;
  if (r.ended && !r.observeOnly) {
    const d = plainStop(
      summary(r).reason === "completed" ? "aborted" : (summary(r).reason as Reason),
    );
    record(state, j.failure, c, { ...d, certainty: c.certainty }, j.print);
    return endedOutcome(state);
  }
  // The governor's core holds the store and the clock; the run's options, the scope it learns in.
  r.learning ??= new OutcomeTracker({
    store: r.core.store,
    now: r.core.now,
    scope: learningScopeOf(r.options),
  });
  state.learned = undefined;
  // Only a retry, a correction or a switch can be demoted: a stop or the host needs no read.
  if (c.action !== "stop" && c.action !== "host") {
    const learned = r.learning.read(state.tool, j.print, guardOf(j));
    if (isThenable(learned)) {
      return learned.then((counts) => {
        state.learned = counts;
        return decideAndSpend(j);
      });
    }
    state.learned = learned;
  }
  return decideAndSpend(j);
}

/** The decision and the budgets it spends; a retry also asks the server's shared retry budget. */
function decideAndSpend<T>(j: Judging<T>): Judged<T> {
  const { state, c, print } = j;
  const r = state.run;
  const d = commit(state, c, print);
  if (d.action !== "retry_dependency" || r.observeOnly) {
    record(state, j.failure, c, d, print);
    return learnFrom(j, d);
  }
  // The server's shared retry budget is asked only when a retry is otherwise allowed; a store
  // that cannot answer grants none.
  let granted: MaybePromise<boolean>;
  try {
    granted = storeOp(state, "a retry-budget take", () => r.core.takeRetry(state.call.server));
  } catch {
    granted = false;
  }
  if (isThenable(granted)) {
    return granted.then(
      (answer) => afterRetryBudget(j, d, answer),
      () => afterRetryBudget(j, d, false),
    );
  }
  return afterRetryBudget(j, d, granted);
}

function afterRetryBudget<T>(j: Judging<T>, decided: Decision, granted: boolean): Judged<T> {
  const { state, c, print } = j;
  let d = decided;
  if (!granted) {
    const { budgets } = state.run;
    budgets.refund("retries");
    budgets.refund("failures");
    d = commit(state, c, print, true);
  }
  record(state, j.failure, c, d, print, true, true, !granted);
  return learnFrom(j, d);
}

/**
 * What followed earlier decisions, and what this one awaits (observe-only enforces nothing, so
 * nothing that follows is an outcome of its decisions).
 */
function learnFrom<T>(j: Judging<T>, d: Decision): Judged<T> {
  const { state } = j;
  const { learning, observeOnly } = state.run;
  if (!observeOnly && learning !== undefined) {
    const first = state.attempts === 1;
    const written = learning.decided(state, state.tool, j.print, d, first, guardOf(j));
    if (isThenable(written)) return written.then(() => outcomeOf(j, d));
  }
  return outcomeOf(j, d);
}

/** What the decision comes to: a retry request, a stop, or a text for the model. */
function outcomeOf<T>(j: Judging<T>, d: Decision): Judged<T> {
  const { state, failure, outcome, c, print, hostError } = j;
  const r = state.run;
  const { core } = r;
  if (r.observeOnly) {
    emitCall(state, "ok", true);
    if ("thrown" in outcome) throw new Escape(outcome.thrown);
    return {
      kind: "ok",
      value: outcome.value,
      attempts: state.attempts,
      replayed: false,
      observed: d,
    };
  }

  // A stop for repeats is not counted in modelRepeats (only what reached the model is): this
  // failure is one more than those.
  const repeats =
    d.action === "stop" && d.reason === "repeated_failure"
      ? (modelRepeatsOf(r, print) ?? 0) + 1
      : (modelRepeatsOf(r, print) ?? 1);
  switch (d.action) {
    case "retry_dependency": {
      r.tally.retry();
      const onRetry = core.options.onRetry;
      if (onRetry !== undefined) {
        const decision = d;
        guarded(() =>
          onRetry({
            runId: r.id,
            tool: state.call.tool,
            server: state.call.server,
            attempt: state.attempts,
            delayMs: decision.delayMs,
            decision,
            failure,
          }),
        );
      }
      return new RetryRequest(d.delayMs);
    }
    case "host":
      // Nothing of the raw failure reaches the model: it stays with the host.
      return stopOutcome(
        state,
        { ...plainStop(d.reason), certainty: d.certainty },
        "the call could not be completed",
        hostError === undefined
          ? { emit: "host", recorded: true }
          : { hostError, emit: "host", recorded: true },
      );
    case "stop":
      noteFailure(state, print);
      return stopOutcome(state, d, observe(failure.text, state), { repeats, recorded: true });
    default: {
      noteFailure(state, print);
      // A write left uncertain by a text the model is asked to act on, in the run instance's own
      // scope: it blocks an identical write while the run lasts, and its key and content entry
      // (doubt.ts) are released when the run ends (no other run can mint either). In a scope the
      // host gives, identical writes of other runs stay refused until a person settles the key.
      if (state.key !== undefined && c.certainty === "unknown" && r.scope === undefined) {
        addReleasable(r, state.key);
        if (state.doubtHeld && state.argsHash !== undefined) {
          addReleasable(r, doubtKeyOf(state.argsHash));
        }
      }
      emitCall(state, "model");
      const text = composeMessage({
        tool: state.call.tool,
        observation: observe(failure.text, state),
        decision: d,
        repeats,
        maxRepeats: state.tool.maxRepeats,
        attempts: state.attempts,
        ...(c.hint !== undefined && { hint: c.hint }),
      });
      return {
        kind: "model",
        action: d.action,
        reason: d.reason,
        fingerprint: print,
        result: modelResult(text),
      };
    }
  }
}

/** The learning tracker's store operations for this call, made once per judging. */
function guardOf<T>(j: Judging<T>): StoreGuard {
  j.guard ??= storeGuard(j.state);
  return j.guard;
}

/** The call's store operations for the learning tracker, bounded like its others. */
function storeGuard(state: CallState): StoreGuard {
  return (op, fn) => storeOp(state, op, fn);
}

export function toFailure(state: CallState, thrown: unknown, deadlineHit: boolean): Failure {
  const { core } = state.run;
  if (isAborted(state)) {
    return localFailure("aborted");
  }
  if (deadlineHit) return localFailure("timeout", "The run's deadline passed during the call");
  if (state.call.toFailure) {
    const mapper = state.call.toFailure;
    return guarded(() => mapper(thrown)) ?? failureFromError(thrown, { now: core.now() });
  }
  return failureFromError(thrown, { now: core.now() });
}

/** Runs the verify step for an uncertain mutation, when the policy and options provide one. */
async function runVerify(state: CallState): Promise<VerifyResult | undefined> {
  const { core, deadline, id } = state.run;
  const steps = core.options.verify;
  // Own properties only: a tool named `constructor` must not find Object's.
  const fn =
    steps !== undefined && Object.hasOwn(steps, state.call.tool)
      ? steps[state.call.tool]
      : undefined;
  if (!fn || !state.tool.idempotency.verify || isAborted(state)) return undefined;
  const ac = new AbortController();
  const onAbort = (event: Event) => ac.abort((event.target as AbortSignal).reason);
  for (const s of wakers(state)) s.addEventListener("abort", onAbort, { once: true });
  const left = deadline - core.now();
  const timer = left <= MAX_TIMER_MS ? setTimeout(() => ac.abort(), Math.max(0, left)) : undefined;
  try {
    const verdict = fn({
      runId: id,
      tool: state.call.tool,
      server: state.call.server,
      args: state.call.args ?? {},
      idempotencyKey: state.key,
      signal: ac.signal,
    });
    // A verify step that ignores its signal must not hold the call past the deadline.
    const cut = new Promise<VerifyResult>((resolve) => {
      ac.signal.addEventListener("abort", () => resolve({ effect: "unknown" }), { once: true });
    });
    return await Promise.race([Promise.resolve(verdict), cut]);
  } catch {
    return { effect: "unknown" };
  } finally {
    clearTimeout(timer);
    for (const s of wakers(state)) s.removeEventListener("abort", onAbort);
  }
}
