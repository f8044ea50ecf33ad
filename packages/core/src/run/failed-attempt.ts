// A failed attempt resolved (docs/architecture.md §1, "judge" and "settle or retry"): its failure
// judged, the breaker, the host and the verify step told or asked, the decision taken and spent in
// one synchronous step, its key settled once (the verify step's answer folded in), and what it
// comes to: a retry or an outcome.
import { HostError } from "../errors.ts";
import { type Classification, classify } from "../judge/classify.ts";
import { type Decision, doubtForbids, safeToRepeat } from "../judge/decide.ts";
import {
  type Failure,
  failureFromError,
  failureFromResult,
  localFailure,
} from "../judge/failure.ts";
import { fingerprintOf } from "../judge/fingerprint.ts";
import { learningScopeOf } from "../judge/learned.ts";
import { composeMessage } from "../judge/message.ts";
import { breakerCounts } from "../reasons.ts";
import type { Certainty, Reason } from "../types.ts";
import { updateBreaker } from "./breaker-steps.ts";
import {
  type CallState,
  honoursKey,
  noteFailure,
  noteSuccess,
  observe,
  type Sent,
} from "./call-state.ts";
import { commit, decideNow } from "./decisions.ts";
import { doubtKeyOf } from "./doubt.ts";
import { emitCall, record } from "./events.ts";
import type { HostResolution, VerifyResult } from "./hooks.ts";
import { type LedgerEvent, ledgerMove, settle } from "./ledger.ts";
import { type LearnedCounts, OutcomeTracker, type StoreGuard } from "./outcome-tracker.ts";
import { endedOutcome, modelResult, plainStop, stopOutcome } from "./outcomes.ts";
import {
  bounded,
  isAborted,
  modelRepeatsOf,
  settleAtEnd,
  stopRun,
  summary,
  wakers,
} from "./run-state.ts";
import { hostContext, storeOp, storeTrouble } from "./store-steps.ts";
import type { CallOutcome } from "./types.ts";
import { guarded, guardedAsync, MAX_TIMER_MS } from "./waits.ts";

/** What a judged failure asks for: another attempt in `retryInMs`, or the call's outcome. */
export type Verdict<T> =
  | { readonly retryInMs: number; readonly outcome?: undefined }
  | { readonly retryInMs?: undefined; readonly outcome: CallOutcome<T> };

/**
 * Resolves a failed attempt: judges it (classify, fingerprint), tells the breaker, asks the host
 * and the verify step when they have a say, reads what was learned, then decides and spends the
 * budgets in one synchronous step (parallel calls of the run can never overshoot a budget or miss
 * a repeat), settles its key once, and returns a retry or the call's outcome. A failure only the
 * host can handle, with no `onHostError` hook, is thrown as a `HostError`, its key settled first.
 */
export async function resolveFailure<T>(state: CallState, sent: Sent): Promise<Verdict<T>> {
  // The ledger: what this attempt's failure says of the write (ledger.ts `ledgerMove`), settled
  // once, when what the attempt comes to is known (`settleFailed`); the verify step's answer, if
  // asked, replaces it. Until then the key stays claimed: a pending entry, never taken over. A
  // judging that throws before the failure is read (a host's `toFailure` that returns no failure)
  // knows nothing of the write: the attempt was sent, so it is settled as in doubt.
  const key: FailedKey = { event: "unknown", settled: state.key === undefined };
  try {
    const failure = failureOf(state, sent);
    const classified = classify(failure, state.tool, state.call);
    // An earlier attempt may have written: so may the call, whatever this attempt came to, and
    // decide neither corrects it into another write nor switches tools (`inDoubt`).
    const c: Classification = state.uncertain
      ? { ...classified, certainty: "unknown" as const, inDoubt: true as const }
      : classified;
    const print = fingerprintOf(
      state.call.tool,
      failure.channel,
      failure.code,
      failure.text,
      state.call.args,
    );
    key.event = failedEvent(c);
    if (state.key !== undefined && c.certainty === "unknown") state.uncertain = true;
    return await resolveClassified<T>(state, sent, failure, c, print, key);
  } finally {
    // However the judging ended (a throw included: the host's error, a hook's, a store's), the key
    // is not left claimed. Unrecorded (the store failed), it stays pending and then counts as
    // uncertain: nothing is retried.
    await guardedAsync(() => settleOnce(state, key));
  }
}

/**
 * A failed attempt never judged: p-retry runs no callback once its signal aborted (the call or the
 * run was cut, or the run ended, as the attempt's failure came in), so `resolveFailure` never ran
 * for it. It was sent and nothing says what it came to: its write is in doubt, and its key is
 * settled so (as a judging cut there would), before the call's outcome names it.
 */
export async function settleUnjudged(state: CallState): Promise<void> {
  if (state.key === undefined) return;
  state.uncertain = true;
  await guardedAsync(() => settleOnce(state, { event: "unknown", settled: false }));
}

/** A failed attempt's key: the ledger event its one settle records, and whether it was made. */
interface FailedKey {
  event: LedgerEvent;
  settled: boolean;
}

/** The ledger event a judged failure is, before any verify step. */
function failedEvent(c: Classification): LedgerEvent {
  return c.certainty === "unknown"
    ? "unknown"
    : c.certainty === "not_sent"
      ? "not_sent"
      : "refused";
}

/**
 * The failed attempt's one settle: the move `event` (by default `key.event`) makes, with the
 * verified write's `result`; nothing once it was made. Throws what the store threw.
 */
async function settleOnce(
  state: CallState,
  key: FailedKey,
  event: LedgerEvent = key.event,
  result?: unknown,
): Promise<void> {
  if (key.settled) return;
  key.settled = true;
  await settle(state, ledgerMove(state, event), result, true);
}

/**
 * The failed attempt's one settle, as `key.event` says. A store that fails comes to the call's
 * outcome (store-steps.ts `storeTrouble`, `certainty` what the attempt came to): nothing is retried.
 */
async function settleFailed<T>(
  state: CallState,
  key: FailedKey,
  certainty: Certainty,
): Promise<CallOutcome<T> | undefined> {
  try {
    await settleOnce(state, key);
    return undefined;
  } catch (error) {
    return (await storeTrouble<T>(state, error, certainty)) as CallOutcome<T>;
  }
}

/**
 * The judging of a failed attempt after its classification: the breaker, the host, the verify
 * step, the decision, and the key's one settle once the decision is known.
 */
async function resolveClassified<T>(
  state: CallState,
  sent: Sent,
  failure: Failure,
  classified: Classification,
  print: string,
  key: FailedKey,
): Promise<Verdict<T>> {
  let c = classified;
  const r = state.run;

  // The breaker counts failures of the dependency.
  if (breakerCounts(c.action, c.reason)) {
    await updateBreaker(state, "failure");
  }

  // Failures only the host can handle: it decides before anything reaches the model.
  let hostError: HostError | undefined;
  if (c.action === "host" && !r.observeOnly) {
    hostError = new HostError({
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
    const hook = r.core.options.onHostError;
    if (!hook) {
      const trouble = await settleFailed<T>(state, key, c.certainty);
      if (trouble !== undefined) return { outcome: trouble };
      // An ended run spends nothing (see `commit`): the run may have ended during the settle.
      if (r.ended === undefined) r.budgets.take("failures");
      const d: Decision = { action: "host", reason: c.reason, certainty: c.certainty };
      record(state, failure, c, d, print);
      emitCall(state, "host");
      stopRun(r, c.reason);
      throw hostError;
    }
    const error = hostError;
    const repeatable = safeToRepeat(c.certainty, state.effect, honoursKey(state));
    const resolution = (await bounded<HostResolution | undefined>(
      state,
      () => hook(error, hostContext(state, repeatable)),
      undefined,
    )) as HostResolution | undefined;
    // A retry the host asks for is a dependency retry like any other: capped, backed off,
    // budgeted, and only when repeating is safe.
    if (resolution?.action === "retry") c = { ...c, action: "retry_dependency" };
    if (resolution?.action === "correct_arguments") {
      c = { ...c, action: "correct_arguments", reason: "invalid_argument" };
    }
  }

  // The verify step, asked when only it can make a retry safe.
  if (!r.observeOnly && state.verified === undefined && uncertainMutation(state, c, print)) {
    const verdict = (await runVerify(state)) as VerifyResult | undefined;
    if (verdict?.effect === "present") {
      // The write is known done; if the store cannot record it, the entry stays pending
      // (uncertain after its lease): a repeat is refused, never re-run.
      await guardedAsync(() => settleOnce(state, key, "verified_present", verdict.result));
      // The verified write is a success: the next identical call is a new logical call.
      noteSuccess(state);
      emitCall(state, "replayed");
      return {
        outcome: {
          kind: "ok",
          value: verdict.result as T,
          attempts: state.attempts,
          replayed: true,
        },
      };
    }
    if (verdict) state.verified = verdict.effect;
    if (verdict?.effect === "absent") {
      // No effect: no attempt so far wrote. The key's one settle frees it.
      state.uncertain = false;
      key.event = "verified_absent";
    }
  }
  // A store that fails on the settle after a verify step found no effect: the write did not
  // happen, whatever this attempt said.
  const certainty: Certainty = key.event === "verified_absent" ? "failed" : c.certainty;

  // A parallel call may have ended the run meanwhile: its reason stands (also where it ended while
  // the learned read or the server's retry budget below was awaited: `commit` decides nothing then).
  const ended = async (): Promise<Verdict<T>> => {
    const d = plainStop(
      summary(r).reason === "completed" ? "aborted" : (summary(r).reason as Reason),
    );
    const trouble = await settleFailed<T>(state, key, certainty);
    if (trouble !== undefined) return { outcome: trouble };
    record(state, failure, c, { ...d, certainty: c.certainty }, print);
    return { outcome: endedOutcome<T>(state) };
  };
  if (r.ended && !r.observeOnly) return ended();

  // What was learned of this failure, read before the decision. Only a retry, a correction or a
  // switch can be demoted: a stop or the host needs no read.
  r.learning ??= new OutcomeTracker({
    store: r.core.store,
    now: r.core.now,
    scope: learningScopeOf(r.options),
  });
  const guard: StoreGuard = (op, fn) => storeOp(state, op, fn);
  state.learned = undefined;
  if (c.action !== "stop" && c.action !== "host") {
    state.learned = (await r.learning.read(state.tool, print, guard)) as LearnedCounts | undefined;
  }

  // The decision and the budgets it spends, in one synchronous step; a retry also asks the
  // server's shared retry budget (a store that cannot answer grants none).
  const decided = commit(state, c, print);
  if (decided === undefined) return ended();
  let d = decided;
  /** The server's answer to a retry's take, when one was asked. */
  let granted: boolean | undefined;
  if (d.action === "retry_dependency" && !r.observeOnly) {
    try {
      granted = (await storeOp(state, "a retry-budget take", () =>
        r.core.takeRetry(state.call.server),
      )) as boolean;
    } catch {
      granted = false;
    }
    if (!granted) {
      r.budgets.refund("retries");
      r.budgets.refund("failures");
      const again = commit(state, c, print, true);
      if (again === undefined) return ended();
      d = again;
    }
  }

  // The decision is known: the key's one settle. A store that fails ends the call as store trouble
  // (the run stops, so what the decision spent of its budgets no longer matters).
  const trouble = await settleFailed<T>(state, key, certainty);
  if (trouble !== undefined) return { outcome: trouble };

  if (granted === undefined) record(state, failure, c, d, print);
  else record(state, failure, c, d, print, true, true, !granted);

  // What followed earlier decisions, and what this one awaits (observe-only enforces nothing).
  if (!r.observeOnly && r.learning !== undefined) {
    await r.learning.decided(state, state.tool, print, d, state.attempts === 1, guard);
  }
  return verdictOf<T>(state, failure, sent, c, d, print, hostError);
}

/**
 * Whether the decision on the run's state now is the `uncertain_mutation` stop. A retry can become
 * one, or a stop for that reason, and a correction or a switch of a write in doubt (decide's
 * `doubtForbids`, the verify step not having answered yet). Any other action is decided without one (and without
 * a random draw, which only a retry's backoff makes), so only a retry is decided here.
 */
function uncertainMutation(state: CallState, c: Classification, print: string): boolean {
  if (c.action === "stop") return c.reason === "uncertain_mutation";
  if (c.action === "correct_arguments" || c.action === "switch_tool") {
    return doubtForbids(c, state.effect);
  }
  if (c.action !== "retry_dependency") return false;
  const tentative = decideNow(state, c, print);
  return tentative.action === "stop" && tentative.reason === "uncertain_mutation";
}

/** What the decision comes to: a retry, a stop, or a text for the model. */
function verdictOf<T>(
  state: CallState,
  failure: Failure,
  sent: Sent,
  c: Classification,
  d: Decision,
  print: string,
  hostError: HostError | undefined,
): Verdict<T> {
  const r = state.run;
  const { core } = r;
  if (r.observeOnly) {
    emitCall(state, "ok", true);
    // Observe-only hands the executor's own answer back, thrown as it was.
    if (sent.thrown) throw sent.value;
    return {
      outcome: {
        kind: "ok",
        value: sent.value as T,
        attempts: state.attempts,
        replayed: false,
        observed: d,
      },
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
      return { retryInMs: d.delayMs };
    }
    case "host":
      // Nothing of the raw failure reaches the model: it stays with the host.
      return {
        outcome: stopOutcome(
          state,
          { ...plainStop(d.reason), certainty: d.certainty },
          "the call could not be completed",
          hostError === undefined
            ? { emit: "host", recorded: true }
            : { hostError, emit: "host", recorded: true },
        ),
      };
    case "stop":
      noteFailure(state, print);
      return {
        outcome: stopOutcome(state, d, observe(failure.text, state), { repeats, recorded: true }),
      };
    default: {
      noteFailure(state, print);
      // A write left uncertain by a text the model is asked to act on, in the run instance's own
      // scope: it blocks an identical write while the run lasts, and its key and content entry
      // (doubt.ts) are released when the run ends (no other run can mint either). In a scope the
      // host gives, identical writes of other runs stay refused until a person settles the key.
      if (state.key !== undefined && c.certainty === "unknown" && r.scope === undefined) {
        settleAtEnd(r, state.key);
        if (state.doubtHeld && state.argsHash !== undefined) {
          settleAtEnd(r, doubtKeyOf(state.argsHash));
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
        outcome: {
          kind: "model",
          action: d.action,
          reason: d.reason,
          fingerprint: print,
          result: modelResult(text),
        },
      };
    }
  }
}

/** The failure an attempt that was sent came to. */
function failureOf(state: CallState, sent: Sent): Failure {
  return sent.thrown
    ? toFailure(state, sent.value, sent.deadlineHit, sent.wasCut)
    : failureFromResult(sent.value as object, state.run.core.now());
}

/**
 * The failure a thrown value comes to: an abort, the deadline, or what the host maps it to. An
 * attempt Governor cut (`wasCut`: a stop of the run cut a read, whose signal and end are not the
 * host's) threw nothing of the executor's: an abort, never handed to the host's `toFailure`, whose
 * mapping could make it a dependency failure that the tool's breaker, shared by every run, counts.
 */
function toFailure(state: CallState, thrown: unknown, deadlineHit: boolean, cut: boolean): Failure {
  const { core } = state.run;
  if (isAborted(state)) {
    return localFailure("aborted");
  }
  if (deadlineHit) return localFailure("timeout", "The run's deadline passed during the call");
  if (cut) return localFailure("aborted");
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
