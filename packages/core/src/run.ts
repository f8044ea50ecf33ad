import pRetry from "p-retry";
import { breakerAfter, breakerCheck } from "./breaker.ts";
import { createRunBudgets, type RunBudgets } from "./budget.ts";
import { canonicalJson, hashArgs } from "./canonical.ts";
import { type Classification, classify } from "./classify.ts";
import { type BudgetName, type Decision, decide, safeToRepeat } from "./decide.ts";
import { resolveEffect, type ToolAnnotations } from "./effect.ts";
import { HostError } from "./errors.ts";
import { type CallOutcomeKind, EVENT_SCHEMA_VERSION, type RunSummary } from "./events.ts";
import { type Failure, failureFromError, failureFromResult, localFailure } from "./failure.ts";
import { fingerprint } from "./fingerprint.ts";
import type { GovernorCore, VerifyResult } from "./governor.ts";
import { composeMessage } from "./message.ts";
import type { ToolPolicy } from "./policy.ts";
import { redact } from "./redact.ts";
import { ACTIONS, type Action, type Effect, PERSON_RESOLVABLE, type Reason } from "./types.ts";

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
}

/** One tool call as the agent asked for it. */
export interface ToolCall {
  readonly tool: string;
  readonly server?: string;
  readonly args?: Readonly<Record<string, unknown>>;
  /** The host's tool-call id: identifies the logical call across retries and workers. */
  readonly callId?: string;
  /** The tool's MCP annotations; used only when the policy trusts the server. */
  readonly annotations?: ToolAnnotations;
  /** Maps what `execute` threw to a failure; adapters tag the origin here. */
  readonly toFailure?: (thrown: unknown) => Failure;
}

/** What one attempt's executor receives. */
export interface AttemptContext {
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** Aborted when the run is aborted or its deadline passes. One per attempt. */
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

/** Thrown inside an attempt to ask p-retry for another attempt after `delayMs`. */
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

function modelResult(text: string): ModelResult {
  return { content: [{ type: "text", text }], isError: true };
}

function isErrorResult(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && (value as { isError?: unknown }).isError === true
  );
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error
    ? reason
    : Object.assign(new Error("aborted"), { name: "AbortError" });
}

/** Sleeps `ms`, or rejects at once when `signal` aborts; leaves no timer or listener behind. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface CallState {
  readonly call: ToolCall;
  readonly tool: ToolPolicy;
  readonly effect: Effect;
  readonly args: Readonly<Record<string, unknown>>;
  readonly callKey: string;
  readonly argsHash: string | undefined;
  readonly key: string | undefined;
  readonly sensitive: readonly string[];
  attempts: number;
  verified: "absent" | "present" | "unknown" | undefined;
}

type Terminal<T> = CallOutcome<T>;

/** Creates a run. Internal: use `governor.startRun()`. */
export function createRun(core: GovernorCore, options: RunOptions): Run {
  const { policy } = core;
  const id = options.runId ?? core.newRunId();
  const startedAt = core.now();
  const deadline = Math.min(
    options.deadline ?? Number.POSITIVE_INFINITY,
    startedAt + policy.budgets.wallTimeMs,
  );
  const budgets: RunBudgets = createRunBudgets(policy.budgets);
  const observeOnly = policy.observeOnly;
  const signal = options.signal;

  const actions = Object.fromEntries(ACTIONS.map((a) => [a, 0])) as Record<Action, number>;
  const fingerprints: Record<string, number> = {};
  const modelRepeats = new Map<string, number>();
  // Per call key, the last result's signature and how many times in a row it came back. A success
  // is kept by reference and hashed only when the same call comes back (most calls never do).
  const identical = new Map<string, { sig: string | undefined; value?: unknown; count: number }>();
  const successes = new Map<string, number>();
  let attempts = 0;
  let retries = 0;
  let failures = 0;
  let lastFailure: RunSummary["lastFailure"];
  let stopped: { reason: Reason; budget?: BudgetName; personResolvable: boolean } | undefined;
  let ended: RunSummary | undefined;

  const summary = (): RunSummary => {
    if (ended) return ended;
    return {
      runId: id,
      reason: stopped?.reason ?? "completed",
      ...(stopped?.budget !== undefined && { budget: stopped.budget }),
      personResolvable: stopped?.personResolvable ?? false,
      calls: budgets.used().calls,
      attempts,
      actions: { ...actions },
      retries,
      failures,
      fingerprints: { ...fingerprints },
      durationMs: core.now() - startedAt,
      ...(lastFailure !== undefined && { lastFailure }),
      observeOnly,
    };
  };

  const end = (): RunSummary => {
    if (ended) return ended;
    const s = summary();
    ended = s;
    core.emit({ v: EVENT_SCHEMA_VERSION, type: "run_end", at: core.now(), runId: id, summary: s });
    core.options.onStop?.(s);
    return s;
  };

  const stopRun = (reason: Reason, budget?: BudgetName, person?: boolean) => {
    if (!stopped) {
      stopped = {
        reason,
        ...(budget !== undefined && { budget }),
        personResolvable: person ?? PERSON_RESOLVABLE.has(reason),
      };
    }
    return end();
  };

  const observe = (text: string, state: CallState) =>
    redact(text, {
      maxLength: policy.redaction.maxLength,
      emails: policy.redaction.emails,
      patterns: policy.redaction.patterns,
      sensitiveValues: state.sensitive,
    });

  const emitCall = (state: CallState, outcome: CallOutcomeKind, started: number) =>
    core.emit({
      v: EVENT_SCHEMA_VERSION,
      type: "call",
      at: core.now(),
      runId: id,
      tool: state.call.tool,
      ...(state.call.server !== undefined && { server: state.call.server }),
      outcome,
      attempts: state.attempts,
      durationMs: core.now() - started,
    });

  /** A stop before or after attempts: ends the run and gives the model its final text. */
  const stopOutcome = <T>(
    state: CallState,
    decision: Extract<Decision, { action: "stop" }>,
    observation: string,
    extra: { hostError?: HostError; repeats?: number } = {},
  ): Terminal<T> => {
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
    };
  };

  const preflightStop = <T>(state: CallState, reason: Reason, budget?: BudgetName, text?: string) =>
    stopOutcome<T>(
      state,
      {
        action: "stop",
        reason,
        certainty: "not_sent",
        cause: reason,
        ...(budget !== undefined && { budget }),
        personResolvable: PERSON_RESOLVABLE.has(reason),
      },
      text ?? "the call was not made",
    );

  const toFailure = (state: CallState, thrown: unknown, deadlineHit: boolean): Failure => {
    if (signal?.aborted) return localFailure("aborted");
    if (deadlineHit) return localFailure("timeout", "The run's deadline passed during the call");
    if (state.call.toFailure) return state.call.toFailure(thrown);
    return failureFromError(thrown, { now: core.now() });
  };

  /** Records the decision in counters and events. */
  const record = (
    state: CallState,
    failure: Failure,
    c: Classification,
    d: Decision,
    print: string,
  ) => {
    failures += 1;
    fingerprints[print] = (fingerprints[print] ?? 0) + 1;
    actions[d.action] += 1;
    lastFailure = { tool: state.call.tool, reason: c.reason, text: observe(failure.text, state) };
    core.emit({
      v: EVENT_SCHEMA_VERSION,
      type: "decision",
      at: core.now(),
      runId: id,
      tool: state.call.tool,
      ...(state.call.server !== undefined && { server: state.call.server }),
      attempt: state.attempts,
      action: d.action,
      reason: d.reason,
      ...(d.action === "stop" && d.cause !== d.reason && { cause: d.cause }),
      certainty: d.certainty,
      fingerprint: print,
      ...(d.action === "retry_dependency" && { delayMs: d.delayMs }),
      observed: observeOnly,
    });
  };

  const updateBreaker = async (state: CallState, outcome: "success" | "failure") => {
    const key = core.breakerKey(state.tool.tool, state.tool.server);
    const before = await core.readBreaker(state.tool);
    if (outcome === "success" && before === undefined) return;
    const next = breakerAfter(before, state.tool.breaker, outcome, core.now());
    await core.store.set(key, next ?? null, state.tool.breaker.cooldownMs * 10 + 60_000);
  };

  /** Records a call's result: a failure by its fingerprint, a success by its (lazy) hash. */
  const noteSignature = (state: CallState, result: { failure: string } | { value: unknown }) => {
    const prev = identical.get(state.callKey);
    if (prev === undefined) {
      identical.set(
        state.callKey,
        "failure" in result
          ? { sig: `f:${result.failure}`, count: 1 }
          : { sig: undefined, value: result.value, count: 1 },
      );
      return;
    }
    const sig = "failure" in result ? `f:${result.failure}` : `ok:${safeHash(result.value)}`;
    const prevSig = prev.sig ?? `ok:${safeHash(prev.value)}`;
    identical.set(state.callKey, { sig, count: prevSig === sig ? prev.count + 1 : 1 });
  };

  /** Runs the verify step for an uncertain mutation, when the policy and options provide one. */
  const runVerify = async (state: CallState): Promise<VerifyResult | undefined> => {
    const fn = core.options.verify?.[state.call.tool];
    if (!fn || !state.tool.idempotency.verify) return undefined;
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await fn({
        runId: id,
        tool: state.call.tool,
        server: state.call.server,
        args: state.call.args ?? {},
        idempotencyKey: state.key,
        signal: ac.signal,
      });
    } catch {
      return { effect: "unknown" };
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  };

  /** One attempt: execute, then either a value, a retry request (thrown), or a terminal outcome. */
  const attemptOnce = async <T>(
    state: CallState,
    execute: Executor<T>,
    started: number,
  ): Promise<Terminal<T>> => {
    if (signal?.aborted) return preflightStop(state, "aborted");
    const remainingMs = deadline - core.now();
    if (remainingMs <= 0) return preflightStop(state, "deadline_exceeded");
    if (state.key !== undefined && state.argsHash !== undefined && !observeOnly) {
      const claim = await core.store.claim(state.key, state.argsHash, {
        now: core.now(),
        allowUncertain: state.tool.idempotency.honorsKeys || state.verified === "absent",
        leaseMs: Math.min(remainingMs, 15 * 60_000),
      });
      if (claim.status === "succeeded") {
        emitCall(state, "replayed", started);
        return {
          kind: "ok",
          value: claim.entry.result as T,
          attempts: state.attempts,
          replayed: true,
        };
      }
      if (claim.status !== "claimed") return refusedClaim(state, claim.status, started);
    }
    // A verify answer speaks of the attempts before it: this new attempt may write again.
    state.verified = undefined;
    state.attempts += 1;
    attempts += 1;
    if (state.attempts === 1) await core.countCall(state.call.server);

    // The attempt's signal is made on first use: an executor that never reads it (a plain
    // function) costs no AbortController, no listener on the run's signal and no deadline timer.
    let ac: AbortController | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let deadlineHit = false;
    const onAbort = () => ac?.abort(signal?.reason);
    const attemptSignal = (): AbortSignal => {
      if (ac) return ac.signal;
      ac = new AbortController();
      if (signal?.aborted) ac.abort(signal.reason);
      else signal?.addEventListener("abort", onAbort, { once: true });
      const left = deadline - core.now();
      if (Number.isFinite(left)) {
        timer = setTimeout(
          () => {
            deadlineHit = true;
            ac?.abort(
              Object.assign(new Error("The run's deadline passed"), { name: "TimeoutError" }),
            );
          },
          Math.max(0, left),
        );
      }
      return ac.signal;
    };
    let value: T | undefined;
    let failure: Failure | undefined;
    let thrown: { error: unknown } | undefined;
    try {
      value = await execute({
        attempt: state.attempts,
        get signal() {
          return attemptSignal();
        },
        remainingMs,
        idempotencyKey: state.key,
        args: state.args,
        meta: state.key === undefined ? {} : { [IDEMPOTENCY_META_KEY]: state.key },
      });
      if (isErrorResult(value)) failure = failureFromResult(value as object, core.now());
    } catch (err) {
      thrown = { error: err };
      failure = toFailure(state, err, deadlineHit);
    } finally {
      if (ac) {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      }
    }

    if (failure === undefined) {
      if (state.key !== undefined && !observeOnly) {
        await core.store.settle(state.key, "succeeded", {
          now: core.now(),
          ...(state.tool.idempotency.replay && { result: value }),
        });
      }
      await updateBreaker(state, "success");
      noteSignature(state, { value });
      if (state.key !== undefined)
        successes.set(state.callKey, (successes.get(state.callKey) ?? 0) + 1);
      emitCall(state, "ok", started);
      return { kind: "ok", value: value as T, attempts: state.attempts, replayed: false };
    }
    return judge(state, failure, thrown, value, started);
  };

  const refusedClaim = <T>(
    state: CallState,
    status: "in_flight" | "args_mismatch" | "uncertain" | "ledger_full",
    started: number,
  ): Terminal<T> => {
    emitCall(state, status === "in_flight" ? "model" : "stop", started);
    if (status === "in_flight") {
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
        fingerprint: "in_flight",
        result: modelResult(text),
      };
    }
    const reason: Reason = status === "uncertain" ? "uncertain_mutation" : "business_rule";
    const observation =
      status === "uncertain"
        ? "an earlier attempt of this write got no answer"
        : status === "args_mismatch"
          ? "this call id was already used with other arguments"
          : "too many writes await confirmation";
    return stopOutcome(
      state,
      { action: "stop", reason, certainty: "not_sent", cause: reason, personResolvable: true },
      observation,
    );
  };

  const judge = async <T>(
    state: CallState,
    failure: Failure,
    thrown: { error: unknown } | undefined,
    value: T | undefined,
    started: number,
  ): Promise<Terminal<T>> => {
    const c = classify(failure, state.tool);
    const print = fingerprint({
      tool: state.call.tool,
      channel: failure.channel,
      text: failure.text,
      ...(failure.code !== undefined && { code: failure.code }),
    });
    const uncertain = c.certainty === "unknown";
    if (state.key !== undefined && !observeOnly) {
      await core.store.settle(state.key, uncertain ? "uncertain" : "failed", { now: core.now() });
    }
    const dependencyFailure = c.action === "retry_dependency" || c.reason === "transport_error";
    if (dependencyFailure) await updateBreaker(state, "failure");

    const keyed = state.key !== undefined && state.tool.idempotency.honorsKeys;
    const exhaustedFor = (action: Action): BudgetName | undefined => {
      if (!budgets.has("failures")) return "failures";
      if (action === "retry_dependency" && !budgets.has("retries")) return "retries";
      if (action === "correct_arguments" && !budgets.has("corrections")) return "corrections";
      if (action === "switch_tool" && !budgets.has("switches")) return "switches";
      return undefined;
    };
    const repeats = (modelRepeats.get(print) ?? 0) + 1;
    const decideNow = async (verified: CallState["verified"]): Promise<Decision> => {
      const exhausted = exhaustedFor(c.action);
      const base = {
        classification: c,
        tool: state.tool,
        effect: state.effect,
        attempt: state.attempts,
        repeats,
        keyed,
        remainingMs: deadline - core.now(),
        random: core.random,
        ...(verified !== undefined && { verified }),
        ...(exhausted !== undefined && { exhausted }),
      };
      const first = decide(base);
      if (first.action !== "retry_dependency" || observeOnly) return first;
      // The server's shared retry budget is consulted only when a retry is otherwise allowed.
      if (await core.takeRetry(state.call.server)) return first;
      return decide({ ...base, serverRetryBudgetEmpty: true });
    };

    let d = await decideNow(state.verified);
    if (
      d.action === "stop" &&
      d.reason === "uncertain_mutation" &&
      !observeOnly &&
      state.verified === undefined
    ) {
      const verdict = await runVerify(state);
      if (verdict) {
        state.verified = verdict.effect;
        if (verdict.effect === "present") {
          if (state.key !== undefined) {
            await core.store.settle(state.key, "succeeded", {
              now: core.now(),
              result: verdict.result,
            });
          }
          emitCall(state, "replayed", started);
          return {
            kind: "ok",
            value: verdict.result as T,
            attempts: state.attempts,
            replayed: true,
          };
        }
        if (verdict.effect === "absent") {
          if (state.key !== undefined)
            await core.store.settle(state.key, "failed", { now: core.now() });
          d = await decideNow("absent");
        }
      }
    }
    budgets.take("failures");
    record(state, failure, c, d, print);

    if (observeOnly) {
      emitCall(state, "ok", started);
      if (thrown) throw new Escape(thrown.error);
      return {
        kind: "ok",
        value: value as T,
        attempts: state.attempts,
        replayed: false,
        observed: d,
      };
    }

    switch (d.action) {
      case "retry_dependency":
        budgets.take("retries");
        retries += 1;
        core.options.onRetry?.({
          runId: id,
          tool: state.call.tool,
          server: state.call.server,
          attempt: state.attempts,
          delayMs: d.delayMs,
          decision: d,
          failure,
        });
        throw new RetryRequest(d.delayMs);
      case "host":
        return hostOutcome(state, failure, d, started);
      case "stop":
        noteSignature(state, { failure: print });
        emitCall(state, "stop", started);
        return stopOutcome(state, d, observe(failure.text, state), { repeats });
      default: {
        budgets.take(d.action === "correct_arguments" ? "corrections" : "switches");
        modelRepeats.set(print, repeats);
        noteSignature(state, { failure: print });
        emitCall(state, "model", started);
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

  const hostOutcome = async <T>(
    state: CallState,
    failure: Failure,
    d: Extract<Decision, { action: "host" }>,
    started: number,
  ): Promise<Terminal<T>> => {
    const error = new HostError({
      tool: state.call.tool,
      server: state.call.server,
      reason: d.reason,
      channel: failure.channel,
      failureCode: failure.code,
      message: `${state.call.tool}: ${failure.text}`,
      cause: failure.raw,
    });
    const hook = core.options.onHostError;
    const safe = safeToRepeat(
      d.certainty,
      state.effect,
      state.key !== undefined && state.tool.idempotency.honorsKeys,
    );
    const resolution = hook
      ? await hook(error, {
          runId: id,
          tool: state.call.tool,
          server: state.call.server,
          attempt: state.attempts,
          effect: state.effect,
          safeToRepeat: safe,
        })
      : undefined;
    if (resolution?.action === "retry" && safe && budgets.take("retries")) {
      retries += 1;
      throw new RetryRequest(0);
    }
    if (resolution?.action === "correct_arguments") {
      const decision: Decision = {
        action: "correct_arguments",
        reason: "invalid_argument",
        certainty: d.certainty,
      };
      emitCall(state, "model", started);
      const text = composeMessage({
        tool: state.call.tool,
        observation: observe(failure.text, state),
        decision,
      });
      return {
        kind: "model",
        action: "correct_arguments",
        reason: "invalid_argument",
        fingerprint: "host",
        result: modelResult(text),
      };
    }
    emitCall(state, "host", started);
    const outcome = stopOutcome<T>(
      state,
      {
        action: "stop",
        reason: d.reason,
        certainty: d.certainty,
        cause: d.reason,
        personResolvable: PERSON_RESOLVABLE.has(d.reason),
      },
      // Nothing of the raw failure reaches the model: it stays with the host.
      "the call could not be completed",
      { hostError: error },
    );
    if (!hook) throw new Escape(error);
    return outcome;
  };

  const call = async <T>(request: ToolCall, execute: Executor<T>): Promise<CallOutcome<T>> => {
    const started = core.now();
    const tool = core.toolPolicy(request.tool, request.server);
    const effect = resolveEffect(tool.effect, tool.trustAnnotations, request.annotations);
    const rawArgs = request.args ?? {};
    const mutating = effect === "mutating";
    // Canonical text, not a hash, keys the loop detector: it costs less than hashing every call.
    const callKey = `${request.server ?? ""}\u0000${request.tool}\u0000${canonicalJson(rawArgs)}`;
    const argsHash = mutating ? hashArgs(rawArgs) : undefined;
    const key = mutating
      ? request.callId !== undefined
        ? core.mintKey(["call", request.callId, request.tool])
        : core.mintKey([
            id,
            request.server ?? "",
            request.tool,
            argsHash ?? "",
            String(successes.get(callKey) ?? 0),
          ])
      : undefined;
    const argName = tool.idempotency.argument;
    const args =
      key !== undefined && argName !== undefined ? { ...rawArgs, [argName]: key } : rawArgs;
    const sensitive = tool.sensitiveArgs.flatMap((name) => {
      const v = rawArgs[name];
      return typeof v === "string" ? [v] : typeof v === "number" ? [String(v)] : [];
    });
    const state: CallState = {
      call: request,
      tool,
      effect,
      args,
      callKey,
      argsHash,
      key,
      sensitive,
      attempts: 0,
      verified: undefined,
    };

    if (ended) {
      const reason = (ended.reason === "completed" ? "aborted" : ended.reason) as Reason;
      return preflightStop(state, reason, ended.budget, "the run has already ended");
    }
    const pre = await preflight(state);
    if (pre) {
      emitCall(state, pre.kind === "model" ? "model" : "stop", started);
      return pre as Terminal<T>;
    }

    try {
      // Most calls need one attempt: p-retry orchestrates only once a retry is asked for.
      let first: RetryRequest;
      try {
        return await attemptOnce(state, execute, started);
      } catch (err) {
        if (!(err instanceof RetryRequest)) throw err;
        first = err;
      }
      if (first.delayMs > 0) await sleep(first.delayMs, signal);
      return await pRetry(() => attemptOnce(state, execute, started), {
        retries: 1000,
        minTimeout: 0,
        maxTimeout: 0,
        factor: 1,
        randomize: false,
        shouldRetry: ({ error }) => error instanceof RetryRequest,
        onFailedAttempt: async ({ error }) => {
          if (error instanceof RetryRequest && error.delayMs > 0)
            await sleep(error.delayMs, signal);
        },
      });
    } catch (err) {
      if (err instanceof Escape) throw err.value;
      if (signal?.aborted) {
        emitCall(state, "stop", started);
        return preflightStop(state, "aborted");
      }
      throw err;
    }
  };

  /** Budgets, access, loops and breakers, before anything is sent. */
  const preflight = async (state: CallState): Promise<Terminal<unknown> | undefined> => {
    const fail = (reason: Reason, budget?: BudgetName) => {
      if (observeOnly) return undefined;
      return preflightStop(state, reason, budget);
    };
    if (signal?.aborted) return fail("aborted");
    if (core.now() >= deadline) return fail("budget_exhausted", "wallTime");
    if (!budgets.take("calls")) return fail("budget_exhausted", "calls");
    const { tool } = state;
    if (tool.access === "deny")
      return modelSwitch(state, "denied_by_policy", "this tool is not allowed");
    if (tool.access === "confirm") {
      const approved = core.options.onConfirm
        ? await core.options.onConfirm({
            runId: id,
            tool: state.call.tool,
            server: state.call.server,
            args: state.call.args ?? {},
            effect: state.effect,
          })
        : false;
      if (!approved) return fail("not_approved");
    }
    const seen = identical.get(state.callKey);
    if (!tool.loop.exempt && seen !== undefined && seen.count >= tool.loop.maxIdentical) {
      return fail("loop_detected");
    }
    const check = breakerCheck(await core.readBreaker(tool), tool.breaker, core.now());
    if (check.verdict === "open")
      return modelSwitch(state, "circuit_open", "the tool is failing and paused");
    if (check.next) await core.store.set(core.breakerKey(tool.tool, tool.server), check.next);
    return undefined;
  };

  /** A switch_tool decision made before any attempt (denied tool, open breaker). */
  const modelSwitch = (
    state: CallState,
    reason: Reason,
    observation: string,
  ): Terminal<unknown> | undefined => {
    const print = fingerprint({ tool: state.call.tool, channel: "local", text: reason });
    const repeats = (modelRepeats.get(print) ?? 0) + 1;
    const exhausted = budgets.has("switches") ? undefined : ("switches" as const);
    const classification: Classification = {
      action: "switch_tool",
      reason,
      certainty: "not_sent",
      source: "signal",
    };
    const d = decide({
      classification,
      tool: state.tool,
      effect: state.effect,
      attempt: 0,
      repeats,
      keyed: false,
      remainingMs: deadline - core.now(),
      random: core.random,
      ...(exhausted !== undefined && { exhausted }),
    });
    record(
      state,
      { channel: "local", origin: "local", text: observation },
      classification,
      d,
      print,
    );
    if (observeOnly) return undefined;
    if (d.action === "stop") return stopOutcome(state, d, observation, { repeats });
    budgets.take("switches");
    modelRepeats.set(print, repeats);
    const text = composeMessage({
      tool: state.call.tool,
      observation,
      decision: d,
      repeats,
      maxRepeats: state.tool.maxRepeats,
    });
    return {
      kind: "model",
      action: "switch_tool",
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
    end,
    summary,
  };
}

function safeHash(value: unknown): string {
  try {
    return hashArgs(value ?? null);
  } catch {
    return "unhashable";
  }
}
