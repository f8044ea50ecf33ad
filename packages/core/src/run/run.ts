import pRetry from "p-retry";
import { type GovernorError, HostError } from "../errors.ts";
import { redactForModel } from "../judge/assess.ts";
import { canonicalJson, hashCanonical } from "../judge/canonical.ts";
import { type Classification, classify } from "../judge/classify.ts";
import { type BudgetName, type Decision, decide, safeToRepeat } from "../judge/decide.ts";
import { resolveEffect, type ToolAnnotations } from "../judge/effect.ts";
import {
  type Failure,
  failureFromError,
  failureFromResult,
  localFailure,
} from "../judge/failure.ts";
import { fingerprint } from "../judge/fingerprint.ts";
import { composeMessage } from "../judge/message.ts";
import type { ToolPolicy } from "../policy/policy.ts";
import { sensitiveValues } from "../policy/sensitive.ts";
import { StoreError } from "../store/store.ts";
import {
  type CallOutcomeKind,
  EVENT_SCHEMA_VERSION,
  type RunSummary,
} from "../telemetry/events.ts";
import { effectHints, recordedFailure } from "../telemetry/recorded-failure.ts";
import {
  type Certainty,
  type Effect,
  type MaybePromise,
  PERSON_RESOLVABLE,
  type Reason,
} from "../types.ts";
import { createAttemptGuard } from "./attempt-guard.ts";
import { type BreakerState, breakerAfter, breakerCheck } from "./breaker.ts";
import { createRunBudgets, type RunBudgets } from "./budget.ts";
import type { GovernorCore, HostContext, HostResolution, VerifyResult } from "./hooks.ts";
import { createLoopDetector } from "./repeats.ts";
import { guardStore, isStoreError, isThenable, step } from "./store-guard.ts";
import { createRunTally } from "./tally.ts";

/** The `_meta` key that carries an idempotency key to the server. */
export const IDEMPOTENCY_META_KEY = "io.governor/idempotency-key";

/** Options of `governor.startRun`. */
export interface RunOptions {
  /** @default a random UUID */
  readonly runId?: string;
  /** Aborting it ends the run at once with `aborted`, backoffs included. */
  readonly signal?: AbortSignal;
  /** Epoch ms after which no attempt starts. @default start + policy.budgets.wallTimeMs */
  readonly deadline?: number;
  /**
   * Where a `callId` is unique, e.g. a job or conversation id (with a tenant prefix when tenants
   * share a store). Calls with the same `callId`, tool and server in the same scope are one logical
   * call, across runs and workers: a recorded result is replayed, an uncertain write refused.
   * Without a scope, a `callId` identifies a call only within this run instance, and a call without
   * `callId` is never taken for a call of another run, even one started with the same `runId`.
   */
  readonly idempotencyScope?: string;
}

/** One tool call as the agent asked for it. */
export interface ToolCall {
  readonly tool: string;
  readonly server?: string;
  readonly args?: Readonly<Record<string, unknown>>;
  /** The tool's input JSON Schema (MCP `inputSchema`): with `args`, it weighs the failure's text. */
  readonly inputSchema?: unknown;
  /** The host's tool-call id: identifies the logical call across retries and workers. */
  readonly callId?: string;
  /** The tool's MCP annotations; used only when the policy trusts the server. */
  readonly annotations?: ToolAnnotations;
  /** Maps what `execute` threw to a failure; adapters tag the origin here. */
  readonly toFailure?: (thrown: unknown) => Failure;
  /**
   * This call's own signal (e.g. the agent SDK's abort signal). Aborting it aborts the attempt in
   * flight, wakes a backoff at once and ends the run with `aborted`.
   */
  readonly signal?: AbortSignal;
}

/** What one attempt's executor receives. */
export interface AttemptContext {
  /** 1 for the first attempt. */
  readonly attempt: number;
  /**
   * Aborted when the run is aborted or its deadline passes. One per attempt, made on first read;
   * read after the attempt ended, it is already aborted.
   */
  readonly signal: AbortSignal;
  /** Ms left before the run's deadline. */
  readonly remainingMs: number;
  /** The call's idempotency key (mutating tools), the same for every attempt of the call. */
  readonly idempotencyKey: string | undefined;
  /** The arguments to send, with the key in the policy's key argument when it names one. */
  readonly args: Readonly<Record<string, unknown>>;
  /** `_meta` to send: carries the key as `io.governor/idempotency-key`. */
  readonly meta: Readonly<Record<string, unknown>>;
}

/** Performs one attempt. Resolving with an `isError` result or throwing both count as failure. */
export type Executor<T> = (ctx: AttemptContext) => Promise<T>;

/** A result for the model: what an MCP `CallToolResult` with `isError: true` looks like. */
export interface ModelResult {
  readonly content: readonly [{ readonly type: "text"; readonly text: string }];
  readonly isError: true;
}

/** How `run.call` ended. Every variant but `ok` carries a `result` to hand to the model. */
export type CallOutcome<T> =
  | {
      readonly kind: "ok";
      readonly value: T;
      readonly attempts: number;
      /** A recorded result was replayed (keyed call) or a verify step found the write done. */
      readonly replayed: boolean;
      /** In observe-only mode, what Governor would have decided (the value passed through). */
      readonly observed?: Decision;
    }
  | {
      readonly kind: "model";
      readonly action: "correct_arguments" | "switch_tool";
      readonly reason: Reason;
      readonly fingerprint: string;
      readonly result: ModelResult;
    }
  | {
      readonly kind: "stop";
      readonly reason: Reason;
      readonly personResolvable: boolean;
      readonly result: ModelResult;
      readonly summary: RunSummary;
      /** Set when the stop came from a failure routed to the host. */
      readonly hostError?: HostError;
      /**
       * The call's idempotency key when the write may have happened (`uncertain_mutation`): a
       * person who checked settles it with `governor.settle(key, …)`.
       */
      readonly idempotencyKey?: string;
    };

/** One agent task. */
export interface Run {
  readonly id: string;
  /** Whether the run has ended (stopped or ended by the host). */
  readonly ended: boolean;
  /** Makes one tool call through Governor; always resolves with an outcome (see `onHostError`). */
  call<T>(call: ToolCall, execute: Executor<T>): Promise<CallOutcome<T>>;
  /** Ends the run (`completed` unless it stopped before) and returns its summary. Idempotent. */
  end(): RunSummary;
  /** A snapshot of the summary so far. */
  summary(): RunSummary;
}

/** What judging a failure returns to ask for another attempt after `delayMs` (thrown to p-retry). */
class RetryRequest extends Error {
  constructor(readonly delayMs: number) {
    super("retry");
  }
}

/** Carries a value to throw past p-retry untouched (it would wrap a non-Error). */
class Escape extends Error {
  constructor(readonly value: unknown) {
    super("escape");
  }
}

/** Node fires a longer timeout after 1 ms; a deadline further away needs no timer. */
const MAX_TIMER_MS = 2_147_483_647;

/** What one attempt came to. */
type Performed<T> = { value: T } | { thrown: unknown; deadlineHit: boolean };

/** The `_meta` of a call without a key. */
const NO_META: Readonly<Record<string, unknown>> = Object.freeze({});

const ignore = () => {};

/**
 * What an executor receives. Its signal is made on first read: an executor that never reads it (a
 * plain function) costs no AbortController.
 */
class Attempt implements AttemptContext {
  /** The attempt ended: a signal read now is already aborted. */
  done = false;
  #controller: AbortController | undefined;
  #stopped: { reason: unknown } | undefined;

  constructor(
    readonly attempt: number,
    readonly remainingMs: number,
    readonly idempotencyKey: string | undefined,
    readonly args: Readonly<Record<string, unknown>>,
    readonly meta: Readonly<Record<string, unknown>>,
  ) {}

  get signal(): AbortSignal {
    if (this.done) return AbortSignal.abort();
    if (this.#stopped) return AbortSignal.abort(this.#stopped.reason);
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  /** Cuts the attempt: its signal aborts with `reason`. */
  stop(reason: unknown): void {
    this.#stopped = { reason };
    this.#controller?.abort(reason);
  }
}

function modelResult(text: string): ModelResult {
  return { content: [{ type: "text", text }], isError: true };
}

function isErrorResult(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && (value as { isError?: unknown }).isError === true
  );
}

function endedError(message: string): Error {
  return Object.assign(new Error(message), { name: "AbortError" });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error
    ? reason
    : Object.assign(new Error("aborted"), { name: "AbortError" });
}

/** Sleeps `ms`, or rejects at once when `signal` aborts; leaves no timer or listener behind. */
/**
 * Sleeps `ms`, or rejects at once when one of the signals aborts; leaves no timer or listener
 * behind. (Not `AbortSignal.any`: on Node 20 it leaks.)
 */
function sleep(ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  return new Promise((resolve, reject) => {
    const aborted = live.find((s) => s.aborted);
    if (aborted) return reject(abortError(aborted));
    const cleanup = () => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener("abort", onAbort);
    };
    const onAbort = (event: Event) => {
      cleanup();
      reject(abortError(event.target as AbortSignal));
    };
    const timer = setTimeout(() => {
      cleanup();
      resolve();
    }, ms);
    for (const s of live) s.addEventListener("abort", onAbort, { once: true });
  });
}

/** Runs a host hook; a hook that throws must not break the agent loop, so its error is dropped. */
function guarded<R>(fn: () => R): R | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

async function guardedAsync<R>(fn: () => MaybePromise<R>): Promise<R | undefined> {
  try {
    return await fn();
  } catch {
    return undefined;
  }
}

interface CallState {
  readonly call: ToolCall;
  readonly tool: ToolPolicy;
  readonly effect: Effect;
  /** Set once preflight let the call through (keys are minted only for calls that are made). */
  args: Readonly<Record<string, unknown>>;
  meta: Readonly<Record<string, unknown>>;
  readonly callKey: string;
  /** The call's number in the run, in start order (1 for the first). */
  readonly seq: number;
  argsHash: string | undefined;
  key: string | undefined;
  readonly sensitive: readonly string[];
  /** Cuts this call's attempt in flight (the call's own signal aborted); set while one runs. */
  cut: ((reason: unknown, deadline: boolean) => void) | undefined;
  readonly started: number;
  attempts: number;
  verified: "absent" | "present" | "unknown" | undefined;
  /** The `now` of the ledger claim this call holds: a late settle cannot free a newer claim. */
  claimedAt: number | undefined;
  /** The call's hash in events, made on first use. */
  callHash: string | undefined;
  /** The last failure text redacted for the model, and its redaction: a text is redacted once. */
  observed: { readonly text: string; readonly redacted: string } | undefined;
}

type Terminal<T> = CallOutcome<T>;
type StopDecision = Extract<Decision, { action: "stop" }>;

/** Creates a run. Internal: use `governor.startRun()`. */
export function createRun(core: GovernorCore, options: RunOptions): Run {
  const { policy } = core;
  const id = options.runId ?? core.newRunId();
  // Keys of calls without a scope are unique to this instance, even when a host reuses a run id.
  // Made with the first such key: a run of read-only calls never needs one.
  let instanceId: string | undefined;
  const instance = () => {
    instanceId ??= core.newRunId();
    return instanceId;
  };
  const scope = options.idempotencyScope;
  const startedAt = core.now();
  const deadline = Math.min(
    options.deadline ?? Number.POSITIVE_INFINITY,
    startedAt + policy.budgets.wallTimeMs,
  );
  const budgets: RunBudgets = createRunBudgets(policy.budgets);
  const observeOnly = policy.observeOnly;
  const signal = options.signal;
  // Signals are made only when a wait needs one (a backoff, a hook, a pending store answer):
  // a call that answers at once costs none. `runEnded` aborts when the run ends: it wakes calls
  // sleeping in a backoff and bounds pending hooks. `hostEnd` aborts when the host ends the run.
  let runEnded: AbortController | undefined;
  let hostEnd: AbortController | undefined;
  // Why the host ended the run: attempts in flight are cut with it. (A stop Governor decides lets
  // attempts already admitted finish: their budget was granted, and cutting a write would only
  // make its outcome uncertain.)
  let hostEnded = false;
  let hostEndError: Error | undefined;
  const hostEndReason = () => {
    hostEndError ??= endedError("The run was ended");
    return hostEndError;
  };
  const runEndedSignal = () => {
    runEnded ??= new AbortController();
    if (ended && !runEnded.signal.aborted) runEnded.abort(endedError("The run has ended"));
    return runEnded.signal;
  };
  const hostEndSignal = () => {
    hostEnd ??= new AbortController();
    if (hostEnded && !hostEnd.signal.aborted) hostEnd.abort(hostEndReason());
    return hostEnd.signal;
  };
  // One deadline timer and one listener for all the run's attempts in flight.
  const guard = createAttemptGuard({
    deadline,
    now: core.now,
    enforceDeadline: !observeOnly,
    signal,
  });

  // Counts and the stop reason, for the summary.
  const tally = createRunTally();
  // How often each fingerprint reached the model (the repeat rule counts these).
  const modelRepeats = new Map<string, number>();
  // Per call key, the last result's signature and how many times in a row it came back: hashes,
  // never the results themselves, and at most MAX_TRACKED calls (the oldest go first).
  const identical = createLoopDetector();
  const successes = new Map<string, number>();
  // Attempts executing now: `end()` aborts them.
  let inFlight = 0;
  // Keys of this run instance left uncertain after a failure that went to the model (see judge).
  const releasable = new Set<string>();
  /**
   * Once the run ends, nobody can derive its instance keys again, so an uncertain entry the model
   * was told to correct guards nothing: it is settled `failed` (kept for the retention period)
   * rather than left to fill the fail-closed ledger. Keys of `uncertain_mutation` stops stay for a
   * person to settle.
   */
  const release = () => {
    for (const key of releasable) {
      void guardedAsync(() => core.store.settle(key, "failed", { now: core.now() }));
    }
    releasable.clear();
  };
  let callCount = 0;
  let ended: RunSummary | undefined;

  const summary = (): RunSummary =>
    ended ?? tally.summary(id, budgets.used().calls, core.now() - startedAt, observeOnly);

  const end = (): RunSummary => {
    if (ended) return ended;
    // Ended by the host while calls still run: they are aborted, so the run did not complete.
    if (inFlight > 0) tally.stop("aborted", undefined, false);
    const s = summary();
    ended = s;
    identical.clear();
    release();
    if (runEnded !== undefined) runEnded.abort(endedError("The run has ended"));
    core.emit({ v: EVENT_SCHEMA_VERSION, type: "run_end", at: core.now(), runId: id, summary: s });
    guarded(() => core.options.onStop?.(s));
    return s;
  };

  const stopRun = (reason: Reason, budget?: BudgetName, person?: boolean) => {
    tally.stop(reason, budget, person);
    return end();
  };

  /**
   * Waits for a host hook, but not past the run's signal, its end or its deadline: a hook nobody
   * answers (an approval UI left open) must not hold the call. Then `fallback` is the answer.
   */
  const bounded = async <R>(
    state: CallState,
    fn: () => MaybePromise<R>,
    fallback: R,
  ): Promise<R> => {
    const left = deadline - core.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort = () => {};
    const cut = new Promise<R>((resolve) => {
      onAbort = () => resolve(fallback);
      if (left <= MAX_TIMER_MS) timer = setTimeout(onAbort, Math.max(0, left));
      for (const s of wakers(state)) s.addEventListener("abort", onAbort, { once: true });
    });
    try {
      if (wakers(state).some((s) => s.aborted)) return fallback;
      const answer = guardedAsync(fn).then((r) => (r === undefined ? fallback : r));
      return await Promise.race([answer, cut]);
    } finally {
      clearTimeout(timer);
      for (const s of wakers(state)) s.removeEventListener("abort", onAbort);
    }
  };

  /** Whether the host aborted the run or this call, or ended the run. */
  const isAborted = (state: CallState) =>
    signal?.aborted === true || hostEnded || state.call.signal?.aborted === true;

  /** Why the call is cut, when it is (the run's signal, the host's end, the call's signal). */
  const abortReason = (state: CallState): { reason: Error } | undefined => {
    if (signal?.aborted) return { reason: abortError(signal) };
    if (hostEnded) return { reason: hostEndReason() };
    const own = state.call.signal;
    return own?.aborted ? { reason: abortError(own) } : undefined;
  };

  /** What cuts a pending store answer: the run's signal, the host's end, the call's signal. */
  const cutters = (state: CallState) =>
    [signal, hostEndSignal(), state.call.signal].filter((s): s is AbortSignal => s !== undefined);

  /** What wakes a wait (a backoff, a hook, a verify step): a cut, or any end of the run. */
  const wakers = (state: CallState) => [...cutters(state), runEndedSignal()];

  /**
   * One store operation, bounded by the store timeout, the deadline, the run's signal, its end and
   * the call's signal. A synchronous store (the memory store) answers with no timer at all.
   */
  const storeOp = <R>(state: CallState, op: string, fn: () => MaybePromise<R>) =>
    guardStore(op, fn, storeBound, state);

  /** What bounds a pending store answer (made only for one). */
  const storeBound = (state: CallState) => ({
    signals: cutters(state),
    timeoutMs: observeOnly
      ? core.storeTimeoutMs
      : Math.min(core.storeTimeoutMs, Math.max(0, deadline - core.now())),
  });

  /**
   * The store failed before or after an attempt: nothing more is executed (fail closed) and the
   * trouble goes to the host, never its text to the model. Without an `onHostError` hook the run
   * ends and the `HostError` is thrown, as for every host failure.
   */
  const storeTrouble = async <T>(
    state: CallState,
    error: unknown,
    certainty: Certainty,
  ): Promise<Terminal<T>> => {
    if (!isStoreError(error)) throw error;
    // Cut by an abort or the host's end: that is what happened, not a store outage.
    if (isAborted(state)) {
      const outcome = preflightStop<T>(state, "aborted");
      return certainty === "unknown" && state.key !== undefined && outcome.kind === "stop"
        ? { ...outcome, idempotencyKey: state.key }
        : outcome;
    }
    // A ledger that lost its data needs a person (restore it, or acknowledge the loss).
    const lost = StoreError.isInstance(error) && error.reason === "ledger_lost";
    const hostError = storeHostError(state, error);
    const print = fingerprint({
      tool: state.call.tool,
      channel: "local",
      text: "store_unavailable",
    });
    const d: Decision = { action: "host", reason: "store_unavailable", certainty };
    const c: Classification = { ...d, source: "signal" };
    record(state, { channel: "local", origin: "local", text: error.message }, c, d, print);
    const hook = core.options.onHostError;
    if (!hook) {
      emitCall(state, "host");
      stopRun("store_unavailable", undefined, lost);
      throw new Escape(hostError);
    }
    await bounded(state, () => hook(hostError, hostContext(state, false)), undefined);
    return stopOutcome(
      state,
      { ...plainStop("store_unavailable"), certainty, personResolvable: lost },
      "the call could not be completed",
      { hostError, emit: "host", recorded: true },
    );
  };

  /** Equal for identical calls (server, tool, canonical arguments); the arguments stay out. */
  const callHashOf = (state: CallState) => {
    state.callHash ??= hashCanonical(state.callKey).slice(0, 16);
    return state.callHash;
  };

  /** A failure text as the model may read it; the same text is redacted once per call. */
  const observe = (text: string, state: CallState) => {
    if (state.observed?.text !== text) {
      state.observed = { text, redacted: redactForModel(text, policy, state.sensitive) };
    }
    return state.observed.redacted;
  };

  const emitCall = (state: CallState, outcome: CallOutcomeKind) =>
    core.listening &&
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

  /** A stop: ends the run and gives the model its final text. */
  const stopOutcome = <T>(
    state: CallState,
    decision: StopDecision,
    observation: string,
    extra: {
      hostError?: HostError;
      repeats?: number;
      emit?: CallOutcomeKind;
      /** The decision was recorded (counted in `actions`) already. */
      recorded?: boolean;
    } = {},
  ): Terminal<T> => {
    // A stop made before any failure (a loop, a budget, an abort) still counts as a stop, once:
    // calls that only find the run already stopped do not count again.
    if (!extra.recorded && !ended && !observeOnly) tally.stopBeforeFailure();
    // A key a person is asked to settle is never released.
    if (decision.reason === "uncertain_mutation" && state.key !== undefined) {
      releasable.delete(state.key);
    }
    emitCall(state, extra.emit ?? "stop");
    if (!observeOnly) stopRun(decision.reason, decision.budget, decision.personResolvable);
    const text = composeMessage({
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
      summary: summary(),
      ...(extra.hostError !== undefined && { hostError: extra.hostError }),
      ...(decision.reason === "uncertain_mutation" &&
        state.key !== undefined && { idempotencyKey: state.key }),
    };
  };

  const plainStop = (reason: Reason, budget?: BudgetName): StopDecision => ({
    action: "stop",
    reason,
    certainty: "not_sent",
    cause: reason,
    ...(budget !== undefined && { budget }),
    personResolvable: PERSON_RESOLVABLE.has(reason),
  });

  /** A stop before anything was sent (budgets, deadline, abort, approval, loops). */
  const preflightStop = <T>(state: CallState, reason: Reason, budget?: BudgetName) =>
    stopOutcome<T>(state, plainStop(reason, budget), "the call was not made");

  /** The answer for a call that finds the run already ended (a parallel call stopped it). */
  const endedOutcome = <T>(state: CallState, uncertainKey?: string): Terminal<T> => {
    const s = summary();
    const reason: Reason = s.reason === "completed" ? "aborted" : s.reason;
    const outcome = stopOutcome<T>(state, plainStop(reason, s.budget), "the run has already ended");
    // A write left uncertain must still name its key, whatever stopped the run.
    return uncertainKey === undefined || outcome.kind !== "stop"
      ? outcome
      : { ...outcome, idempotencyKey: uncertainKey };
  };

  const toFailure = (state: CallState, thrown: unknown, deadlineHit: boolean): Failure => {
    if (isAborted(state)) {
      return localFailure("aborted");
    }
    if (deadlineHit) return localFailure("timeout", "The run's deadline passed during the call");
    if (state.call.toFailure) {
      const mapper = state.call.toFailure;
      return guarded(() => mapper(thrown)) ?? failureFromError(thrown, { now: core.now() });
    }
    return failureFromError(thrown, { now: core.now() });
  };

  /** Records a decision in counters and events. */
  const record = (
    state: CallState,
    failure: Failure,
    c: Classification,
    d: Decision,
    print: string,
    counted = true,
    isFailure = true,
    retryBudgetEmpty = false,
  ) => {
    const text = observe(failure.text, state);
    if (counted) {
      tally.decision(d.action, print, { tool: state.call.tool, reason: c.reason, text }, isFailure);
    }
    if (!core.listening) return;
    const now = core.now();
    core.emit({
      v: EVENT_SCHEMA_VERSION,
      type: "decision",
      at: now,
      runId: id,
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
      observed: observeOnly,
      input: {
        callHash: callHashOf(state),
        failure: recordedFailure(failure, text),
        ...(state.call.annotations !== undefined && {
          annotations: effectHints(state.call.annotations),
        }),
        elapsedMs: now - startedAt,
        ...(options.deadline !== undefined && { hostDeadlineMs: options.deadline - now }),
        ...(state.verified !== undefined && { verified: state.verified }),
        ...(retryBudgetEmpty && { retryBudgetEmpty: true as const }),
      },
    });
  };

  /** Breaker bookkeeping after an attempt; a store that fails here loses a count, nothing more. */
  const updateBreaker = (state: CallState, outcome: "success" | "failure"): MaybePromise<void> => {
    // The breaker is advisory: a store that fails here leaves the call's outcome as it is.
    let before: MaybePromise<BreakerState | undefined>;
    try {
      before = storeOp(state, "a breaker read", () => core.readBreaker(state.tool));
    } catch {
      return;
    }
    if (isThenable(before)) return before.then((b) => writeBreaker(state, outcome, b), ignore);
    return writeBreaker(state, outcome, before);
  };

  const writeBreaker = (
    state: CallState,
    outcome: "success" | "failure",
    before: BreakerState | undefined,
  ): MaybePromise<void> => {
    // A success with no breaker state (the common case) writes nothing.
    if (outcome === "success" && before === undefined) return;
    const next = breakerAfter(before, state.tool.breaker, outcome, core.now());
    const ttl = state.tool.breaker.cooldownMs * 10 + 60_000;
    const key = core.breakerKey(state.tool.tool, state.tool.server);
    return step(
      () => storeOp(state, "a breaker write", () => core.store.set(key, next ?? null, ttl)),
      ignore,
      ignore,
    );
  };

  /** Records a call's result by a hash: a failure by its fingerprint, a success by its JSON. */
  const noteSignature = (state: CallState, result: { failure: string } | { value: unknown }) => {
    if (!ended) identical.note(state.callKey, result);
  };

  /**
   * Settles a key; a result the store cannot keep (not JSON) is dropped, the state is not. A store
   * that fails throws a `store_error`: the entry stays pending, and a pending entry whose lease has
   * passed counts as uncertain (fail closed).
   */
  const settle = (
    state: CallState,
    key: string,
    to: "succeeded" | "failed" | "uncertain",
    result?: unknown,
  ): MaybePromise<void> => {
    const claimed = state.claimedAt === undefined ? {} : { claimedAt: state.claimedAt };
    const write = (withResult: boolean) =>
      storeOp(state, "a ledger settle", () =>
        core.store.settle(
          key,
          to,
          withResult ? { now: core.now(), result, ...claimed } : { now: core.now(), ...claimed },
        ),
      );
    if (result === undefined) return write(false);
    return step(
      () => write(true),
      ignore,
      (error) => {
        // A result that is not JSON (a BigInt, a cycle) is dropped; any other failure stands.
        const cause = isStoreError(error) ? error.cause : error;
        if (!(cause instanceof TypeError)) throw error;
        return write(false);
      },
    );
  };

  /** Runs the verify step for an uncertain mutation, when the policy and options provide one. */
  const runVerify = async (state: CallState): Promise<VerifyResult | undefined> => {
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
    const timer =
      left <= MAX_TIMER_MS ? setTimeout(() => ac.abort(), Math.max(0, left)) : undefined;
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
  };

  /**
   * Performs one attempt, bounded by the run's signal, its end, the call's signal and the deadline
   * even if `execute` is not: the run's guard holds one timer and one listener for all attempts in
   * flight, and the attempt's own controller is made only if the executor reads `ctx.signal`.
   * Never rejects.
   */
  const perform = <T>(
    state: CallState,
    execute: Executor<T>,
    remainingMs: number,
  ): Promise<Performed<T>> => {
    const cutBy = abortReason(state);
    if (cutBy !== undefined) return Promise.resolve({ thrown: cutBy.reason, deadlineHit: false });
    const ctx = new Attempt(state.attempts, remainingMs, state.key, state.args, state.meta);
    return new Promise<Performed<T>>((resolve) => {
      const finish = (outcome: Performed<T>) => {
        if (ctx.done) return;
        ctx.done = true;
        guard.leave(cut);
        if (state.cut === cut) state.cut = undefined;
        resolve(outcome);
      };
      const cut = (reason: unknown, deadlineHit: boolean) => {
        ctx.stop(reason);
        finish({ thrown: reason, deadlineHit });
      };
      state.cut = cut;
      guard.enter(cut);
      let running: Promise<T>;
      try {
        running = Promise.resolve(execute(ctx));
      } catch (thrown) {
        finish({ thrown, deadlineHit: false });
        return;
      }
      running.then(
        (value) => finish({ value }),
        (thrown: unknown) => finish({ thrown, deadlineHit: false }),
      );
    });
  };

  /**
   * One attempt: the ledger claim and the retry-budget count, the executor, then a value, a
   * retry request or a terminal outcome. With a store that answers synchronously, the executor is
   * the only thing awaited.
   */
  const attemptOnce = <T>(
    state: CallState,
    execute: Executor<T>,
  ): MaybePromise<Terminal<T> | RetryRequest> => {
    // A parallel call may have stopped the run during this call's backoff: no more retries. (A
    // first attempt admitted before the stop still runs: its budget was granted.)
    if (ended && !observeOnly && state.attempts > 0) return endedOutcome(state);
    if (isAborted(state)) return preflightStop(state, "aborted");
    const remainingMs = deadline - core.now();
    if (remainingMs <= 0 && !observeOnly) return preflightStop(state, "deadline_exceeded");
    const send = (): Promise<Terminal<T> | RetryRequest> => {
      // A verify answer speaks of the attempts before it: this new attempt may write again.
      state.verified = undefined;
      state.attempts += 1;
      tally.attempt();
      inFlight += 1;
      return perform(state, execute, remainingMs).then((outcome) => {
        inFlight -= 1;
        return afterAttempt(state, outcome);
      });
    };
    const admitted = claimAndCount<T>(state);
    if (isThenable(admitted)) return admitted.then((refused) => refused ?? send());
    return admitted ?? send();
  };

  /**
   * Before an attempt: the ledger claim (keyed calls) and the retry-budget count (first attempts).
   * Undefined lets the attempt go.
   */
  const claimAndCount = <T>(state: CallState): MaybePromise<Terminal<T> | undefined> => {
    // Observe-only sends calls untouched, store or no store.
    if (state.key === undefined || state.argsHash === undefined) return countFirst<T>(state);
    const { key, argsHash } = state;
    const claimedAt = core.now();
    return step(
      () =>
        storeOp(state, "a ledger claim", () =>
          core.store.claim(key, argsHash, {
            now: claimedAt,
            allowUncertain: state.tool.idempotency.honorsKeys || state.verified === "absent",
            // The lease is the holder's longest attempt, not this claimer's remaining time: a
            // claimer with a short deadline must not take a key another attempt still holds.
            leaseMs: Math.min(policy.budgets.wallTimeMs, 15 * 60_000),
          }),
        ),
      (claim): MaybePromise<Terminal<T> | undefined> => {
        if (claim.status === "succeeded") {
          noteSuccess(state);
          emitCall(state, "replayed");
          return {
            kind: "ok",
            value: claim.entry.result as T,
            attempts: state.attempts,
            replayed: true,
          };
        }
        if (claim.status !== "claimed") return refusedClaim<T>(state, claim.status);
        state.claimedAt = claimedAt;
        return countFirst<T>(state);
      },
      (error) => countTrouble<T>(state, error),
    );
  };

  /** A first attempt counts against the server's retry budget window. */
  const countFirst = <T>(state: CallState): MaybePromise<Terminal<T> | undefined> => {
    if (state.attempts !== 0) return admitted<T>(state);
    let counted: MaybePromise<unknown>;
    try {
      counted = storeOp(state, "a retry-budget count", () => core.countCall(state.call.server));
    } catch (error) {
      return countTrouble<T>(state, error);
    }
    if (isThenable(counted)) {
      return counted.then(
        () => admitted<T>(state),
        (error: unknown) => countTrouble<T>(state, error),
      );
    }
    return admitted<T>(state);
  };

  /** The store failed before an attempt; observe-only sends calls untouched, store or no store. */
  const countTrouble = <T>(state: CallState, error: unknown) =>
    observeOnly && state.key === undefined
      ? admitted<T>(state)
      : storeTrouble<T>(state, error, "not_sent");

  /**
   * After the store steps, which may have seen the run end or the call aborted: nothing is sent
   * then, and a key just claimed is released as not sent.
   */
  const admitted = <T>(state: CallState): MaybePromise<Terminal<T> | undefined> => {
    if (!isAborted(state)) return undefined;
    if (state.key === undefined) return preflightStop<T>(state, "aborted");
    const { key } = state;
    return guardedAsync(() => settle(state, key, "failed")).then(() =>
      preflightStop<T>(state, "aborted"),
    );
  };

  /** What an attempt came to: a success, or a failure to judge. */
  const afterAttempt = <T>(
    state: CallState,
    outcome: Performed<T>,
  ): MaybePromise<Terminal<T> | RetryRequest> => {
    if ("value" in outcome) {
      if (!isErrorResult(outcome.value)) return succeeded(state, outcome.value);
      return judge(state, failureFromResult(outcome.value as object, core.now()), outcome);
    }
    return judge(state, toFailure(state, outcome.thrown, outcome.deadlineHit), outcome);
  };

  /** The outcome of a call that succeeded now (not replayed), noted for loops and events. */
  const ok = <T>(state: CallState, value: T): Terminal<T> => {
    noteSignature(state, { value });
    noteSuccess(state);
    emitCall(state, "ok");
    return { kind: "ok", value, attempts: state.attempts, replayed: false };
  };

  /** A success: the ledger and the breaker are told, then the value goes back. */
  const succeeded = <T>(state: CallState, value: T): MaybePromise<Terminal<T>> => {
    if (state.key === undefined) {
      const updated = updateBreaker(state, "success");
      return isThenable(updated) ? updated.then(() => ok(state, value)) : ok(state, value);
    }
    const done = () => ok(state, value);
    const breaker = () => {
      const updated = updateBreaker(state, "success");
      return isThenable(updated) ? updated.then(done) : done();
    };
    const { key } = state;
    return step(
      () => settle(state, key, "succeeded", state.tool.idempotency.replay ? value : undefined),
      breaker,
      (error) => {
        // The write happened and its answer is here: the model gets it. The entry stays
        // pending, so after its lease a repeat of this logical call is refused, never re-run.
        storeAfterEffect(state, error);
        return breaker();
      },
    );
  };

  /** A success of a keyed call: the next identical call without `callId` is a new logical call. */
  const noteSuccess = (state: CallState) => {
    if (state.key !== undefined) {
      successes.set(state.callKey, (successes.get(state.callKey) ?? 0) + 1);
    }
  };

  /** Tells the host that the store failed after a write succeeded; the call's outcome stands. */
  const storeAfterEffect = (state: CallState, error: unknown) => {
    if (!isStoreError(error)) throw error;
    const hook = core.options.onHostError;
    if (!hook) return;
    const hostError = storeHostError(state, error, " (the call succeeded; its key stays pending)");
    void guardedAsync(() => hook(hostError, hostContext(state, false)));
  };

  /** The host's view of a store failure: the operation in the message, the store's error as cause. */
  const storeHostError = (state: CallState, error: GovernorError, note = "") =>
    new HostError({
      tool: state.call.tool,
      server: state.call.server,
      reason: "store_unavailable",
      channel: "local",
      failureCode: StoreError.isInstance(error) ? error.reason : undefined,
      message: `${state.call.tool}: ${error.message}${note}`,
      cause: error,
    });

  /** What `onHostError` sees of a call. */
  const hostContext = (state: CallState, repeatable: boolean): HostContext => ({
    runId: id,
    tool: state.call.tool,
    server: state.call.server,
    attempt: state.attempts,
    effect: state.effect,
    safeToRepeat: repeatable,
  });

  const refusedClaim = <T>(
    state: CallState,
    status: "in_flight" | "args_mismatch" | "uncertain" | "ledger_full",
  ): Terminal<T> => {
    if (status === "in_flight") {
      emitCall(state, "model");
      const text = composeMessage({
        tool: state.call.tool,
        observation: "an identical call is still in progress",
        decision: { action: "correct_arguments", reason: "conflict", certainty: "not_sent" },
        hint: "Wait for its result instead of repeating it",
      });
      return {
        kind: "model",
        action: "correct_arguments",
        reason: "conflict",
        fingerprint: fingerprint({ tool: state.call.tool, channel: "local", text: "in_flight" }),
        result: modelResult(text),
      };
    }
    const reason: Reason = status === "uncertain" ? "uncertain_mutation" : "business_rule";
    const observation =
      status === "uncertain"
        ? "an earlier attempt of this write may have taken effect"
        : status === "args_mismatch"
          ? "this call id was already used with other arguments"
          : "too many writes await confirmation";
    return stopOutcome(state, { ...plainStop(reason), personResolvable: true }, observation);
  };

  /**
   * Judges a failed attempt. Everything that awaits (ledger, breaker, host hook, verify) happens
   * first; the decision and the budgets it spends are then taken in one synchronous step, so
   * parallel calls of the run can never overshoot a budget or miss a repeat.
   */
  const judge = async <T>(
    state: CallState,
    failure: Failure,
    outcome: { value: T } | { thrown: unknown },
  ): Promise<Terminal<T> | RetryRequest> => {
    let c = classify(failure, state.tool, state.call);
    const print = fingerprint({
      tool: state.call.tool,
      channel: failure.channel,
      text: failure.text,
      ...(failure.code !== undefined && { code: failure.code }),
    });
    if (state.key !== undefined) {
      try {
        await settle(state, state.key, c.certainty === "unknown" ? "uncertain" : "failed");
      } catch (error) {
        // Unrecorded, the entry stays pending and then counts as uncertain: nothing is retried.
        return storeTrouble(state, error, c.certainty);
      }
    }
    if (c.action === "retry_dependency" || c.reason === "transport_error") {
      await updateBreaker(state, "failure");
    }

    // Failures only the host can handle: it decides before anything reaches the model.
    let hostError: HostError | undefined;
    if (c.action === "host" && !observeOnly) {
      hostError = new HostError({
        tool: state.call.tool,
        server: state.call.server,
        reason: c.reason,
        channel: failure.channel,
        failureCode: failure.code,
        // Host-facing text is logged: redacted like the model's (the raw error stays in cause).
        message: `${state.call.tool}: ${observe(failure.text, state)}`,
        cause: failure.raw,
      });
      const hook = core.options.onHostError;
      if (!hook) {
        budgets.take("failures");
        const d: Decision = { action: "host", reason: c.reason, certainty: c.certainty };
        record(state, failure, c, d, print);
        emitCall(state, "host");
        stopRun(c.reason);
        throw new Escape(hostError);
      }
      const error = hostError;
      const resolution = await bounded<HostResolution | undefined>(
        state,
        () =>
          hook(error, hostContext(state, safeToRepeat(c.certainty, state.effect, keyed(state)))),
        undefined,
      );
      // A retry the host asks for is a dependency retry like any other: capped, backed off,
      // budgeted, and only when repeating is safe.
      if (resolution?.action === "retry") c = { ...c, action: "retry_dependency" };
      if (resolution?.action === "correct_arguments") {
        c = { ...c, action: "correct_arguments", reason: "invalid_argument" };
      }
    }

    // Ask the verify step when only it can make a retry safe.
    if (!observeOnly && state.verified === undefined) {
      const tentative = decideNow(state, c, print);
      if (tentative.action === "stop" && tentative.reason === "uncertain_mutation") {
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
        if (verdict?.effect === "absent" && state.key !== undefined) {
          try {
            await settle(state, state.key, "failed");
          } catch (error) {
            return storeTrouble(state, error, c.certainty);
          }
        }
      }
    }
    if (ended && !observeOnly) {
      const d = plainStop(
        summary().reason === "completed" ? "aborted" : (summary().reason as Reason),
      );
      record(state, failure, c, { ...d, certainty: c.certainty }, print);
      const uncertain = state.key !== undefined && c.certainty === "unknown";
      return endedOutcome(state, uncertain ? state.key : undefined);
    }

    let d = commit(state, c, print);
    if (d.action === "retry_dependency" && !observeOnly) {
      // The server's shared retry budget is asked only when a retry is otherwise allowed; a store
      // that cannot answer grants none.
      let granted = false;
      try {
        granted = await storeOp(state, "a retry-budget take", () =>
          core.takeRetry(state.call.server),
        );
      } catch {
        granted = false;
      }
      if (!granted) {
        budgets.refund("retries");
        budgets.refund("failures");
        d = commit(state, c, print, true);
      }
      record(state, failure, c, d, print, true, true, !granted);
    } else {
      record(state, failure, c, d, print);
    }

    if (observeOnly) {
      emitCall(state, "ok");
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
        ? (modelRepeats.get(print) ?? 0) + 1
        : (modelRepeats.get(print) ?? 1);
    switch (d.action) {
      case "retry_dependency": {
        tally.retry();
        const decision = d;
        guarded(() =>
          core.options.onRetry?.({
            runId: id,
            tool: state.call.tool,
            server: state.call.server,
            attempt: state.attempts,
            delayMs: decision.delayMs,
            decision,
            failure,
          }),
        );
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
        noteSignature(state, { failure: print });
        return stopOutcome(state, d, observe(failure.text, state), { repeats, recorded: true });
      default: {
        noteSignature(state, { failure: print });
        // A key only this run can derive, left uncertain by a text the model is asked to act on:
        // it blocks an identical repeat while the run lasts, and is released when the run ends.
        if (
          state.key !== undefined &&
          c.certainty === "unknown" &&
          (state.call.callId === undefined || scope === undefined)
        ) {
          releasable.add(state.key);
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
  };

  const keyed = (state: CallState) =>
    observeOnly
      ? state.tool.idempotency.honorsKeys
      : state.key !== undefined && state.tool.idempotency.honorsKeys;

  // Every spent budget: decide checks the one of the action it returns (a retry that runs out
  // switches tools, and spends `switches`, not `retries`).
  const exhaustedBudgets = (): BudgetName[] =>
    (["failures", "retries", "corrections", "switches"] as const).filter((b) => !budgets.has(b));

  /** The decision on the run's state right now (pure; spends nothing). */
  const decideNow = (
    state: CallState,
    c: Classification,
    print: string,
    serverRetryBudgetEmpty = false,
  ): Decision => {
    const exhausted = exhaustedBudgets();
    return decide({
      classification: c,
      tool: state.tool,
      effect: state.effect,
      attempt: state.attempts,
      repeats: (modelRepeats.get(print) ?? 0) + 1,
      keyed: keyed(state),
      remainingMs: deadline - core.now(),
      random: core.random,
      ...(state.verified !== undefined && { verified: state.verified }),
      ...(exhausted.length > 0 && { exhausted }),
      ...(serverRetryBudgetEmpty && { serverRetryBudgetEmpty }),
    });
  };

  /** Decides and spends, in one synchronous step (no await between reading and taking). */
  const commit = (
    state: CallState,
    c: Classification,
    print: string,
    serverRetryBudgetEmpty = false,
    isFailure = true,
  ): Decision => {
    const d = decideNow(state, c, print, serverRetryBudgetEmpty);
    if (isFailure) budgets.take("failures");
    if (d.action === "retry_dependency") budgets.take("retries");
    if (d.action === "correct_arguments" || d.action === "switch_tool") {
      budgets.take(d.action === "correct_arguments" ? "corrections" : "switches");
      modelRepeats.set(print, (modelRepeats.get(print) ?? 0) + 1);
    }
    return d;
  };

  const call = async <T>(request: ToolCall, execute: Executor<T>): Promise<CallOutcome<T>> => {
    const started = core.now();
    const tool = core.toolPolicy(request.tool, request.server);
    const effect = resolveEffect(tool.effect, tool.trustAnnotations, request.annotations);
    const rawArgs = request.args ?? {};
    let canonical: string | undefined;
    let invalidArgs: string | undefined;
    try {
      canonical = canonicalJson(rawArgs);
    } catch (error) {
      // A cycle: not JSON, so not something a server could be sent.
      invalidArgs = error instanceof Error ? error.message.replace(/^canonicalJson: /, "") : "";
    }
    // Canonical text keys the loop detector (a hash when long: the map keeps keys, not bodies).
    const callText = `${request.server ?? ""}\u0000${request.tool}\u0000${canonical ?? ""}`;
    const callKey = callText.length > 256 ? hashCanonical(callText) : callText;
    const state: CallState = {
      call: request,
      tool,
      effect,
      args: rawArgs,
      meta: NO_META,
      callKey,
      seq: ++callCount,
      argsHash: undefined,
      key: undefined,
      sensitive: sensitiveOf(tool, rawArgs),
      cut: undefined,
      started,
      attempts: 0,
      verified: undefined,
      claimedAt: undefined,
      callHash: undefined,
      observed: undefined,
    };

    if (ended && !observeOnly) return endedOutcome(state);
    // The call's own signal ends the run (the host gave up on this call and its loop) and cuts
    // its attempt in flight.
    const own = request.signal;
    const onCallAbort =
      own &&
      (() => {
        if (!ended) stopRun("aborted");
        state.cut?.(own.reason, false);
      });
    if (own && onCallAbort) own.addEventListener("abort", onCallAbort, { once: true });
    try {
      if (own?.aborted) return preflightStop(state, "aborted");
      if (invalidArgs !== undefined) {
        const refused = preflightModel(
          state,
          "correct_arguments",
          "invalid_argument",
          `the arguments are not valid JSON (${invalidArgs})`,
          true,
        );
        if (refused) return refused as Terminal<T>;
      }
      let pre = preflight(state);
      if (isThenable(pre)) pre = await pre;
      if (pre) return pre as Terminal<T>;
      mintKey(state, rawArgs, canonical ?? "null");
      try {
        // With a store that answers synchronously, the attempt's executor is the only await.
        let first = attemptOnce(state, execute);
        if (isThenable(first)) first = await first;
        return first instanceof RetryRequest ? await retryAfter(state, execute, first) : first;
      } catch (err) {
        if (err instanceof Escape) throw err;
        if (isAborted(state)) return preflightStop(state, "aborted");
        if (ended && !observeOnly) return endedOutcome(state);
        if (err instanceof RetryRequest) return preflightStop(state, "retries_exhausted");
        throw err;
      }
    } catch (err) {
      if (err instanceof Escape) throw err.value;
      throw err;
    } finally {
      if (own && onCallAbort) own.removeEventListener("abort", onCallAbort);
    }
  };

  /**
   * Mints the call's idempotency key (mutating tools only), once preflight let it through. With a
   * `callId`, the key is the host's logical call: in the run's scope when it has one, else in this
   * run instance. Without, it is this instance, the server, the tool, the arguments and how many
   * identical calls succeeded before, so it never matches a call of another run.
   */
  const mintKey = (
    state: CallState,
    rawArgs: Readonly<Record<string, unknown>>,
    canonical: string,
  ) => {
    if (state.effect !== "mutating" || observeOnly) return;
    const { call: request, tool } = state;
    const argsHash = hashCanonical(canonical);
    const server = request.server ?? "";
    const key =
      request.callId !== undefined
        ? scope !== undefined
          ? core.mintKey(["scope", scope, server, request.tool, request.callId])
          : core.mintKey(["run", instance(), server, request.tool, request.callId])
        : core.mintKey([
            instance(),
            server,
            request.tool,
            argsHash,
            String(successes.get(state.callKey) ?? 0),
          ]);
    const argName = tool.idempotency.argument;
    state.argsHash = argsHash;
    state.key = key;
    state.meta = { [IDEMPOTENCY_META_KEY]: key };
    if (argName !== undefined) state.args = { ...rawArgs, [argName]: key };
  };

  /** The attempts after the first asked for a retry: p-retry orchestrates them. */
  const retryAfter = async <T>(
    state: CallState,
    execute: Executor<T>,
    first: RetryRequest,
  ): Promise<Terminal<T>> => {
    if (first.delayMs > 0) await sleep(first.delayMs, ...wakers(state));
    return await pRetry(
      async () => {
        const outcome = await attemptOnce(state, execute);
        if (outcome instanceof RetryRequest) throw outcome;
        return outcome;
      },
      {
        retries: 1000,
        minTimeout: 0,
        maxTimeout: 0,
        factor: 1,
        randomize: false,
        shouldRetry: ({ error }) => error instanceof RetryRequest,
        onFailedAttempt: async ({ error }) => {
          if (error instanceof RetryRequest && error.delayMs > 0) {
            await sleep(error.delayMs, ...wakers(state));
          }
        },
      },
    );
  };

  /** Budgets, access, loops and breakers, before anything is sent; synchronous when the store is. */
  const preflight = (state: CallState): MaybePromise<Terminal<unknown> | undefined> => {
    if (isAborted(state)) return refuse(state, "aborted");
    if (core.now() >= deadline) return refuse(state, "budget_exhausted", "wallTime");
    const { tool } = state;
    if (tool.access === "deny") {
      return preflightModel(state, "switch_tool", "denied_by_policy", "this tool is not allowed");
    }
    if (tool.access === "confirm" && !observeOnly) return confirmed(state);
    return loopsAndBreaker(state);
  };

  /** A preflight refusal; observe-only reports what would have stopped the call, and lets it go. */
  const refuse = (
    state: CallState,
    reason: Reason,
    budget?: BudgetName,
  ): Terminal<unknown> | undefined => {
    if (!observeOnly) return preflightStop(state, reason, budget);
    // Observe-only: what would have stopped the call is reported, not enforced or counted.
    const d = plainStop(reason, budget);
    const c: Classification = { action: "stop", reason, certainty: "not_sent", source: "signal" };
    const print = fingerprint({ tool: state.call.tool, channel: "local", text: reason });
    record(state, { channel: "local", origin: "local", text: reason }, c, d, print, false);
    return undefined;
  };

  /** A tool marked `confirm`: the host approves the call, or it is refused. */
  const confirmed = async (state: CallState): Promise<Terminal<unknown> | undefined> => {
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
  };

  /** The loop detector, then the breaker (one probe per cool-down when it is half-open). */
  const loopsAndBreaker = (state: CallState): MaybePromise<Terminal<unknown> | undefined> => {
    const { tool } = state;
    const seen = identical.get(state.callKey);
    if (!tool.loop.exempt && seen !== undefined && seen.count >= tool.loop.maxIdentical) {
      return refuse(state, "loop_detected");
    }
    // Observe-only sends calls untouched, store or no store; otherwise fail closed.
    const trouble = (error: unknown) =>
      observeOnly ? admit(state, false) : storeTrouble(state, error, "not_sent");
    return step(
      () => storeOp(state, "a breaker read", () => core.readBreaker(tool)),
      (breaker) => {
        const check = breakerCheck(breaker, tool.breaker, core.now());
        if (check.verdict !== "probe" || breaker?.openedAt === undefined) {
          return admit(state, check.verdict === "open");
        }
        // One probe per cool-down, across parallel calls and workers: the store's atomic counter
        // lets exactly one caller through.
        const period = Math.floor(
          (core.now() - breaker.openedAt) / Math.max(1, tool.breaker.cooldownMs),
        );
        const gate = `${core.breakerKey(tool.tool, tool.server)}:probe:${breaker.openedAt}:${period}`;
        const ttl = Math.max(1, tool.breaker.cooldownMs);
        return step(
          () => storeOp(state, "a breaker probe", () => core.store.increment(gate, 1, ttl)),
          (taken) => admit(state, taken > 1),
          trouble,
        );
      },
      trouble,
    );
  };

  /**
   * The last preflight step, synchronous: a run that stopped meanwhile admits nothing, and the
   * calls budget is taken by exactly the calls that go on to execute.
   */
  const admit = (state: CallState, open: boolean): Terminal<unknown> | undefined => {
    if (open) {
      return preflightModel(state, "switch_tool", "circuit_open", "the tool is failing and paused");
    }
    if (ended && !observeOnly) return endedOutcome(state);
    if (isAborted(state)) return refuse(state, "aborted");
    if (!budgets.take("calls")) return refuse(state, "budget_exhausted", "calls");
    return undefined;
  };

  /**
   * A decision for the model made before any attempt (a denied tool, an open breaker, arguments
   * that are not JSON). Nothing failed, so the failures budget is not spent, but the action's own
   * budget and the repeat rule apply.
   */
  const preflightModel = (
    state: CallState,
    action: "switch_tool" | "correct_arguments",
    reason: Reason,
    observation: string,
    isFailure = false,
  ): Terminal<unknown> | undefined => {
    const print = fingerprint({ tool: state.call.tool, channel: "local", text: reason });
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
        repeats: modelRepeats.get(print) ?? 1,
        recorded: true,
      });
    }
    emitCall(state, "model");
    const text = composeMessage({
      tool: state.call.tool,
      observation,
      decision: d,
      repeats: modelRepeats.get(print) ?? 1,
      maxRepeats: state.tool.maxRepeats,
    });
    return {
      kind: "model",
      action,
      reason,
      fingerprint: print,
      result: modelResult(text),
    };
  };

  return {
    id,
    get ended() {
      return ended !== undefined;
    },
    call,
    end: () => {
      if (!ended) {
        // Calls still running are aborted: the run did not complete.
        if (inFlight > 0) tally.stop("aborted", undefined, false);
        hostEnded = true;
        // The reason is an Error (with a stack) only when something listens for it.
        if (hostEnd !== undefined) hostEnd.abort(hostEndReason());
        if (guard.size > 0) guard.cutAll(hostEndReason());
      }
      return end();
    },
    summary,
  };
}

/** The values of the arguments the policy marks sensitive (names or paths, at any depth). */
function sensitiveOf(tool: ToolPolicy, args: Readonly<Record<string, unknown>>): string[] {
  return tool.sensitiveArgs.length === 0 ? [] : sensitiveValues(args, tool.sensitiveArgs);
}
