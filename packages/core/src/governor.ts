import { createHash, randomUUID } from "node:crypto";
import type { BreakerState } from "./breaker.ts";
import type { Decision } from "./decide.ts";
import { GovernorError, type HostError } from "./errors.ts";
import { boundEvent } from "./event-limits.ts";
import type { GovernorEvent, RunSummary } from "./events.ts";
import type { Failure } from "./failure.ts";
import { createMemoryStore } from "./memory-store.ts";
import {
  loadPolicy,
  type Policy,
  type PolicyInput,
  resolveToolPolicy,
  type ToolPolicy,
} from "./policy.ts";
import { createRun, type Run, type RunOptions } from "./run.ts";
import type { Store } from "./store.ts";
import { isThenable } from "./store-guard.ts";
import { createOtelRecorder, type MeterLike } from "./telemetry.ts";
import type { Effect, MaybePromise } from "./types.ts";

/** What a retry hook sees. */
export interface RetryContext {
  readonly runId: string;
  readonly tool: string;
  readonly server: string | undefined;
  /** The attempt that failed (1 for the first). */
  readonly attempt: number;
  readonly delayMs: number;
  readonly decision: Extract<Decision, { action: "retry_dependency" }>;
  readonly failure: Failure;
}

/** What the host sees for a failure routed to it. */
export interface HostContext {
  readonly runId: string;
  readonly tool: string;
  readonly server: string | undefined;
  readonly attempt: number;
  readonly effect: Effect;
  /** Whether repeating the call cannot duplicate an effect (read-only, idempotent, keyed or not sent). */
  readonly safeToRepeat: boolean;
}

/**
 * The host's answer to a {@link HostError}:
 * - `stop` (the default): the run ends with the failure's reason (`protocol_error`, …);
 * - `retry`: the host fixed the cause (e.g. reconnected); the call is attempted again. Honored only
 *   when `safeToRepeat`, else the run stops;
 * - `correct_arguments`: pass a redacted correction to the model (for servers that still send
 *   `-32602` for bad arguments).
 */
export type HostResolution = { readonly action: "stop" | "retry" | "correct_arguments" };

/** What the confirm hook sees before a tool marked `confirm` runs. */
export interface ConfirmContext {
  readonly runId: string;
  readonly tool: string;
  readonly server: string | undefined;
  readonly args: Readonly<Record<string, unknown>>;
  readonly effect: Effect;
}

/** What a verify step sees: the call whose write may or may not have happened. */
export interface VerifyContext {
  readonly runId: string;
  readonly tool: string;
  readonly server: string | undefined;
  readonly args: Readonly<Record<string, unknown>>;
  readonly idempotencyKey: string | undefined;
  readonly signal: AbortSignal;
}

/** A verify step's answer: the effect is absent (safe to retry), present (done), or unknown. */
export type VerifyResult =
  | { readonly effect: "absent" }
  | { readonly effect: "present"; readonly result?: unknown }
  | { readonly effect: "unknown" };

/** Options of {@link createGovernor}. Every hook receives read-only context. */
export interface GovernorOptions {
  /** Where breaker state, retry budgets and the idempotency ledger live. @default createMemoryStore() */
  readonly store?: Store;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
  /** Uniform in [0, 1), for jitter. @default Math.random */
  readonly random?: () => number;
  /** An OpenTelemetry meter; by default the global one when `@opentelemetry/api` is installed. */
  readonly meter?: MeterLike;
  /** Record OpenTelemetry metrics. @default true */
  readonly metrics?: boolean;
  /**
   * Tool names to record as the metrics' `tool` attribute from the first call, besides those the
   * policy names exactly (e.g. the tools the host offers). Other names are recorded as
   * `(unknown)` until a call of theirs succeeds: see `createOtelRecorder`'s `knownTools`.
   */
  readonly knownTools?: readonly string[];
  /** Every event (decisions, calls, run ends) as versioned JSON, e.g. into `createJsonlSink`. */
  readonly onEvent?: (event: GovernorEvent) => void;
  /** After every decision on a failure. */
  readonly onDecision?: (event: Extract<GovernorEvent, { type: "decision" }>) => void;
  /** Before each dependency retry's backoff. */
  readonly onRetry?: (ctx: RetryContext) => void;
  /** When a run ends, for any reason. */
  readonly onStop?: (summary: RunSummary) => void;
  /**
   * Receives failures only the host can handle. Without it, `run.call` ends the run with the
   * failure's reason and throws the {@link HostError}.
   */
  readonly onHostError?: (
    error: HostError,
    ctx: HostContext,
  ) => MaybePromise<HostResolution | undefined>;
  /** Approves a call of a tool marked `confirm`. Without it, such calls stop with `not_approved`. */
  readonly onConfirm?: (ctx: ConfirmContext) => MaybePromise<boolean>;
  /**
   * Longest wait for one store operation, in ms. A store that fails or does not answer in time
   * fails closed: nothing is executed, and the trouble goes to the host (`store_unavailable`).
   * @default 5_000
   */
  readonly storeTimeoutMs?: number;
  /** Verify steps per tool name, for mutations whose outcome is unknown. */
  readonly verify?: Readonly<Record<string, (ctx: VerifyContext) => MaybePromise<VerifyResult>>>;
}

/** One governor per policy; one run per agent task. */
export interface Governor {
  /** The parsed policy. */
  readonly policy: Policy;
  /** Starts a run: one agent task with its own budgets, fingerprints and deadline. */
  startRun(options?: RunOptions): Run;
  /** The resolved settings of a tool (cached). */
  toolPolicy(tool: string, server?: string): ToolPolicy;
  /** Of the given tools, those whose circuit breaker is open now (adapters hide them). */
  unavailableTools(tools: readonly string[], server?: string): Promise<string[]>;
  /**
   * Settles an idempotency key by hand (a person checked): `succeeded` (the write happened) or
   * `failed` (it did not; a retry may run).
   */
  settle(key: string, outcome: "succeeded" | "failed"): Promise<void>;
}

/** Shared parts of a governor that runs use. Internal. */
export interface GovernorCore {
  readonly policy: Policy;
  readonly options: GovernorOptions;
  readonly store: Store;
  readonly now: () => number;
  readonly random: () => number;
  toolPolicy(tool: string, server?: string): ToolPolicy;
  emit(event: GovernorEvent): void;
  breakerKey(tool: string, server: string | undefined): string;
  /** Synchronous when the store is (the memory store): no promise on the hot path. */
  readBreaker(tool: ToolPolicy): MaybePromise<BreakerState | undefined>;
  /** Counts a first attempt against the server's retry budget window. */
  countCall(server: string | undefined): MaybePromise<unknown>;
  /** Takes one retry from the server's budget; false when it has no room. */
  takeRetry(server: string | undefined): MaybePromise<boolean>;
  /** Longest wait for one store operation, in ms. */
  readonly storeTimeoutMs: number;
  mintKey(parts: readonly string[]): string;
  newRunId(): string;
}

/** The tool names a policy spells out (globs match names a model may invent: not these). */
function policyToolNames(policy: Policy): string[] {
  const exact = (name: string) => !/[*?]/.test(name);
  const out: string[] = [];
  const add = (settings: { readonly alternatives?: readonly string[] | undefined }) => {
    for (const alt of settings.alternatives ?? []) if (exact(alt)) out.push(alt);
  };
  for (const [name, settings] of Object.entries(policy.tools)) {
    if (exact(name)) out.push(name);
    add(settings);
  }
  for (const server of Object.values(policy.servers)) {
    add(server);
    for (const [name, settings] of Object.entries(server.tools)) {
      if (exact(name)) out.push(name);
      add(settings);
    }
  }
  add(policy.defaults);
  return out;
}

/**
 * Creates a governor from a policy (an object or JSON text; validated, see `loadPolicy`).
 * @example
 * const governor = createGovernor({ tools: { "get_*": { effect: "read_only" } } });
 * const run = governor.startRun();
 * const outcome = await run.call({ tool: "get_note", args: { id: "x" } }, () => getNote("x"));
 */
export function createGovernor(
  policy: PolicyInput | Policy | string = {},
  options: GovernorOptions = {},
): Governor {
  const parsed = loadPolicy(policy);
  for (const [name, fn] of Object.entries(options.verify ?? {})) {
    if (typeof fn !== "function") {
      throw new GovernorError(
        "invalid_options",
        `options.verify.${name} must be a function (ctx) => VerifyResult`,
      );
    }
  }
  const { storeTimeoutMs } = options;
  if (
    storeTimeoutMs !== undefined &&
    (typeof storeTimeoutMs !== "number" ||
      !(storeTimeoutMs > 0) ||
      !Number.isFinite(storeTimeoutMs))
  ) {
    throw new GovernorError(
      "invalid_options",
      `options.storeTimeoutMs must be a positive finite number of ms, got ${String(storeTimeoutMs)}`,
    );
  }
  const store = options.store ?? createMemoryStore();
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const recorder =
    options.metrics === false
      ? undefined
      : createOtelRecorder({
          ...(options.meter && { meter: options.meter }),
          knownTools: [...policyToolNames(parsed), ...(options.knownTools ?? [])],
        });
  const listeners: ((event: GovernorEvent) => void)[] = [];
  if (recorder) listeners.push(recorder);
  if (options.onEvent) listeners.push(options.onEvent);
  const onDecision = options.onDecision;
  if (onDecision) listeners.push((e) => e.type === "decision" && onDecision(e));
  const cache = new Map<string, ToolPolicy>();
  const toolPolicy = (tool: string, server?: string): ToolPolicy => {
    const key = `${server ?? ""}\u0000${tool}`;
    let resolved = cache.get(key);
    if (!resolved) {
      resolved = resolveToolPolicy(parsed, tool, server);
      if (cache.size < 10_000) cache.set(key, resolved);
    }
    return resolved;
  };
  const { ratio, reserve, windowMs } = parsed.retryBudget;
  const windowKey = (server: string | undefined, kind: string) =>
    `rb:${server ?? ""}:${Math.floor(now() / windowMs)}:${kind}`;

  const core: GovernorCore = {
    policy: parsed,
    options,
    store,
    now,
    random,
    toolPolicy,
    emit(raw) {
      // Names a model invents reach every listener capped and redacted.
      const event = boundEvent(raw);
      // Telemetry and hooks must never break the agent loop: an error in one is dropped.
      for (const listener of listeners) {
        try {
          listener(event);
        } catch {
          // ignored on purpose
        }
      }
    },
    breakerKey: (tool, server) => `br:${server ?? ""}:${tool}`,
    readBreaker(tool) {
      const state = store.get<BreakerState | null>(core.breakerKey(tool.tool, tool.server));
      return isThenable(state)
        ? Promise.resolve(state).then((s) => s ?? undefined)
        : (state ?? undefined);
    },
    countCall(server) {
      return store.increment(windowKey(server, "calls"), 1, windowMs * 2);
    },
    takeRetry(server) {
      const room = (calls: number | undefined, retries: number) =>
        retries <= (calls ?? 0) * ratio + reserve;
      const calls = store.get<number>(windowKey(server, "calls"));
      if (isThenable(calls)) {
        return Promise.resolve(calls).then(async (c) =>
          room(c, await store.increment(windowKey(server, "retries"), 1, windowMs * 2)),
        );
      }
      const retries = store.increment(windowKey(server, "retries"), 1, windowMs * 2);
      return isThenable(retries)
        ? Promise.resolve(retries).then((r) => room(calls, r))
        : room(calls, retries);
    },
    storeTimeoutMs: options.storeTimeoutMs ?? 5_000,
    mintKey(parts) {
      return `gk_${createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 32)}`;
    },
    newRunId: () => randomUUID(),
  };

  return {
    policy: parsed,
    toolPolicy,
    startRun: (runOptions = {}) => createRun(core, runOptions),
    async unavailableTools(tools, server) {
      const out: string[] = [];
      for (const tool of tools) {
        const state = await core.readBreaker(toolPolicy(tool, server));
        if (
          state?.openedAt !== undefined &&
          now() - state.openedAt < toolPolicy(tool, server).breaker.cooldownMs
        ) {
          out.push(tool);
        }
      }
      return out;
    },
    async settle(key, outcome) {
      await store.settle(key, outcome, { now: now() });
    },
  };
}
