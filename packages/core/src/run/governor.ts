import { GovernorError } from "../errors.ts";
import { MAX_NAME } from "../judge/bound-name.ts";
import { flatPrefix32, sha256Hex } from "../judge/canonical.ts";
import { describeLearned, type LearnedEntry, learnedPrefix } from "../judge/learned.ts";
import {
  loadPolicy,
  type Policy,
  type PolicyInput,
  resolveToolPolicy,
  type ToolPolicy,
} from "../policy/policy.ts";
import { createMemoryStore, isMemoryStore } from "../store/memory-store.ts";
import { boundEvent, boundName } from "../telemetry/event-limits.ts";
import type { GovernorEvent } from "../telemetry/events.ts";
import { createOtelMetrics } from "../telemetry/telemetry.ts";
import { createTracing } from "../telemetry/tracing.ts";
import type { BreakerState } from "./breaker.ts";
import { settleByHand } from "./doubt.ts";
import type {
  ConfirmContext,
  GovernorCore,
  GovernorOptions,
  HostContext,
  HostResolution,
  RetryContext,
  VerifyContext,
  VerifyResult,
} from "./hooks.ts";
import { createRun, type Run, type RunOptions, stateOfRun } from "./run.ts";
import { newRunId } from "./run-id.ts";
import { MAX_LEASE_MS, type RunState } from "./run-state.ts";

export type {
  ConfirmContext,
  GovernorCore,
  GovernorOptions,
  HostContext,
  HostResolution,
  RetryContext,
  VerifyContext,
  VerifyResult,
};

import { isThenable } from "./store-guard.ts";
import { dropRejection } from "./waits.ts";

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
   * `failed` (it did not; a retry may run). A key that was in doubt also stops refusing writes
   * identical to its own (docs/idempotency.md, "A write in doubt"). `failed` for a key whose call
   * may still be in flight (pending, its holder's lease not run out) is refused with
   * `idempotency_conflict`.
   */
  settle(key: string, outcome: "succeeded" | "failed"): Promise<void>;
  /**
   * What was learned from outcomes (docs/learning.md), the most recently updated first, decayed
   * to now, with the demotions each causes under this policy. Empty when the store does not learn.
   * @default limit 100
   */
  learned(options?: { readonly limit?: number }): Promise<LearnedEntry[]>;
  /**
   * Forgets what was learned: everything, a server's (`{ server }`), or one tool's
   * (`{ server, tool }`; a tool called without a server: `{ tool }` alone). Answers how many
   * records were deleted; 0 when the store does not learn.
   */
  resetLearned(filter?: { readonly server?: string; readonly tool?: string }): Promise<number>;
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
  const metrics =
    options.metrics === false
      ? undefined
      : createOtelMetrics({
          ...(options.meter && { meter: options.meter }),
          knownTools: [...policyToolNames(parsed), ...(options.knownTools ?? [])],
        });
  const tracing =
    options.tracing === false
      ? undefined
      : createTracing(
          options.tracing === true || options.tracing === undefined ? {} : options.tracing,
        );
  const listeners: ((event: GovernorEvent) => void)[] = [];
  if (metrics) listeners.push(metrics.onEvent);
  if (options.onEvent) listeners.push(options.onEvent);
  const onDecision = options.onDecision;
  if (onDecision) listeners.push((e) => e.type === "decision" && onDecision(e));
  // Resolved tool policies by server, then tool (no key string made per call); at most 10,000.
  const cache = new Map<string, Map<string, ToolPolicy>>();
  let cached = 0;
  // The last tool asked for, answered without a lookup: an agent loop mostly calls one tool again.
  let lastTool: string | undefined;
  let lastServer: string | undefined;
  let lastResolved: ToolPolicy | undefined;
  const toolPolicy = (tool: string, server?: string): ToolPolicy => {
    if (lastResolved !== undefined && lastTool === tool && lastServer === server) {
      return lastResolved;
    }
    const serverKey = server ?? "";
    let byTool = cache.get(serverKey);
    let resolved = byTool?.get(tool);
    if (!resolved) {
      resolved = resolveToolPolicy(parsed, tool, server);
      if (cached < 10_000) {
        if (byTool === undefined) {
          byTool = new Map();
          cache.set(serverKey, byTool);
        }
        byTool.set(tool, resolved);
        cached += 1;
      }
    }
    lastTool = tool;
    lastServer = server;
    lastResolved = resolved;
    return resolved;
  };
  const { ratio, reserve, windowMs } = parsed.retryBudget;
  // The keys of each server's current retry-budget window, made once per window, not per call.
  const windows = new Map<string, { window: number; calls: string; retries: string }>();
  const windowKey = (server: string | undefined, kind: "calls" | "retries", at = now()) => {
    const window = Math.floor(at / windowMs);
    const name = server ?? "";
    let keys = windows.get(name);
    if (keys?.window !== window) {
      if (keys === undefined && windows.size >= 10_000) windows.clear();
      keys = {
        window,
        calls: `rb:${name}:${window}:calls`,
        retries: `rb:${name}:${window}:retries`,
      };
      windows.set(name, keys);
    }
    return keys[kind];
  };
  // Each resolved tool's breaker key, made once (tool policies are cached objects).
  const breakerKeys = new WeakMap<ToolPolicy, string>();
  const breakerKeyOf = (tool: ToolPolicy) => {
    let key = breakerKeys.get(tool);
    if (key === undefined) {
      key = core.breakerKey(tool.tool, tool.server);
      breakerKeys.set(tool, key);
    }
    return key;
  };

  const core: GovernorCore = {
    policy: parsed,
    options,
    store,
    now,
    random,
    toolPolicy,
    listening: listeners.length > 0,
    tracing,
    // With only the metrics listening, a call's outcome is counted without building its event.
    callMetric:
      metrics !== undefined && listeners.length === 1
        ? (tool, server, outcome, failed) =>
            metrics.call(
              boundName(tool),
              server === undefined ? undefined : boundName(server),
              outcome,
              failed,
            )
        : undefined,
    emit(raw) {
      // Names a model invents reach every listener capped and redacted.
      const event = boundEvent(raw);
      // Telemetry and hooks must never break the agent loop: an error in one is dropped.
      for (const listener of listeners) {
        try {
          // An `async` listener's rejection is dropped too: unhandled, it would end the process.
          dropRejection(listener(event) as unknown);
        } catch {
          // ignored on purpose
        }
      }
    },
    // Names bounded as events bound them: a name a model invents must not grow a stored key.
    breakerKey: (tool, server) => `br:${boundName(server ?? "")}:${boundName(tool)}`,
    ownStore: isMemoryStore(store),
    readBreaker(tool) {
      const state = store.get<BreakerState | null>(breakerKeyOf(tool));
      return isThenable(state)
        ? Promise.resolve(state).then((s) => s ?? undefined)
        : (state ?? undefined);
    },
    countCall(server, clock) {
      return store.increment(windowKey(server, "calls", clock.clockAt), 1, windowMs * 2);
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
      return flatPrefix32("gk_", sha256Hex(parts.join("\u0000")));
    },
    newRunId,
  };

  return {
    policy: parsed,
    toolPolicy,
    startRun: (runOptions = {}) =>
      createRun(core, checkRunOptions(runOptions), continuedState(core, runOptions.continues)),
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
      const before = await store.entry(key);
      // A key whose call may still be in flight is not a write in doubt yet: settled `failed` now,
      // the same logical call could be claimed afresh and sent while the first may still commit.
      // (`succeeded` sends nothing again: a host whose settle of a success failed records it so.)
      // No run's claim holds longer than MAX_LEASE_MS: a longer lease on the entry (another
      // client of the store) must not keep a person from settling the key for as long as it says.
      // A store that counts leases on its own clock (Redis) says what is left by it: the holder's
      // clock and the person's may differ by minutes.
      if (outcome === "failed" && before?.state === "pending" && before.leaseMs !== undefined) {
        const held =
          before.leaseLeftMs === undefined
            ? now() - before.updatedAt
            : before.leaseMs - before.leaseLeftMs;
        const left = Math.min(before.leaseMs, MAX_LEASE_MS) - held;
        if (left > 0) {
          throw new GovernorError(
            "idempotency_conflict",
            `settle: key ${key} is still in flight (claimed ${Math.max(0, held)} ms ago, its lease runs ${left} ms more). "failed" is taken once its lease has run out (a call that ends first settles the key itself; one whose store failed to record it leaves it pending until then); "succeeded" is taken now`,
          );
        }
      }
      // The key's write no longer in doubt: identical writes may be sent again (doubt.ts). Its
      // content entry first: a store failing between the two leaves the key in doubt, so the
      // person's retried settle frees the entry again (the other way round, the key would read
      // as settled and the retry would free nothing, refusing the identical write for good).
      await settleByHand(store, before, outcome, now());
      await store.settle(key, outcome, { now: now() });
    },
    async learned(options = {}) {
      const limit = options.limit ?? 100;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new GovernorError(
          "invalid_options",
          `learned: limit must be a positive integer, got ${String(limit)}`,
        );
      }
      if (store.listOutcomes === undefined) return [];
      const records = await store.listOutcomes(limit);
      const at = now();
      const settingsFor = (server: string | undefined, tool: string) => {
        const tp = toolPolicy(tool, server);
        return { learning: tp.learning, hasAlternatives: tp.alternatives.length > 0 };
      };
      return records.flatMap((r) => describeLearned(r, at, settingsFor) ?? []);
    },
    async resetLearned(filter = {}) {
      if (store.resetOutcomes === undefined) return 0;
      const { server, tool } = filter;
      for (const [name, value] of Object.entries({ server, tool })) {
        if (value !== undefined && typeof value !== "string") {
          throw new GovernorError(
            "invalid_options",
            `resetLearned: ${name} must be a string, got ${typeof value}`,
          );
        }
      }
      if (server === undefined && tool === undefined) return await store.resetOutcomes();
      return await store.resetOutcomes(learnedPrefix(server, tool));
    },
  };
}

/**
 * The run options a host passes, checked where a bad value would otherwise fail later, inside a
 * call: `learning.scope` becomes part of every learned-outcome key of the run.
 */
function checkRunOptions(options: RunOptions): RunOptions {
  const scope = options.learning?.scope;
  if (
    scope !== undefined &&
    (typeof scope !== "string" || scope.length === 0 || scope.length > MAX_NAME)
  ) {
    throw new GovernorError(
      "invalid_options",
      `startRun: learning.scope must be a string of 1 to ${MAX_NAME} characters (a tenant id), got ${
        typeof scope === "string" ? `${scope.length} characters` : String(scope)
      }`,
    );
  }
  const kept = options.keptAnswerMs;
  if (kept !== undefined && (typeof kept !== "number" || !Number.isFinite(kept) || kept <= 0)) {
    throw new GovernorError(
      "invalid_options",
      `startRun: keptAnswerMs must be a positive finite number of ms, got ${String(kept)}`,
    );
  }
  return options;
}

/**
 * The state of the run a new run goes on from (`RunOptions.continues`), checked: a run this
 * governor started (another governor's budgets are another policy's), that has ended (one still
 * going on would keep spending what the new run starts with, and the two together could spend
 * every budget twice), and that no other run goes on from yet (each of two would get what it left).
 */
function continuedState(core: GovernorCore, run: Run | undefined): RunState | undefined {
  if (run === undefined) return undefined;
  const from = stateOfRun(run);
  let got: string | undefined;
  if (from === undefined) got = describeValue(run);
  else if (from.core !== core) got = `run ${from.id}, which another governor started`;
  else if (from.ended === undefined) {
    got = `run ${from.id}, which is still going on (end it with run.end() first)`;
  } else if (from.continuedBy !== undefined) {
    got = `run ${from.id}, which run ${from.continuedBy} already goes on from (continue that one)`;
  }
  if (got !== undefined) {
    throw new GovernorError(
      "invalid_options",
      `startRun: continues must be a run this governor started, that has ended and that no other run goes on from yet; got ${got}`,
    );
  }
  return from;
}

/** What a value that is not a run is, for an error message (never its contents). */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return `a ${typeof value}`;
  return "an object that is not a run of startRun";
}
