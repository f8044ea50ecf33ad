/**
 * What a stop means behind the proxy. A host has no notion of Governor's run, so the proxy
 * remembers each stop for a while, with a scope that says which later calls would fail the same
 * way: those are answered at once, without reaching the server. Pure apart from the clock.
 */

import type { Reason } from "@governor/core";
import { canonicalJson } from "@governor/core/judge";

/**
 * Which later calls a stop blocks:
 * - `server`: every tool of the server (credentials, quota, a loop);
 * - `window`: every tool of the server until the current run's window ends (its budgets or its
 *   time are spent; the next window starts a fresh run);
 * - `tool`: this tool, any arguments (forbidden, not approved, misconfigured, a retry that never
 *   recovered, the same failure again and again);
 * - `call`: this tool with the same arguments (a business rule may allow other values; a write
 *   that may have happened must never be sent again);
 * - `none`: nothing (the host cancelled; the next call may well work), unless the stop names an
 *   idempotency key: a write that may have happened blocks the same call (see `remember`).
 */
export type StopScope = "server" | "window" | "tool" | "call" | "none";

/** The scope of a stop with this reason. Reasons not listed block nothing. */
export function stopScope(reason: Reason): StopScope {
  switch (reason) {
    case "unauthorized":
    case "quota_exceeded":
    case "loop_detected":
      return "server";
    case "budget_exhausted":
    case "deadline_exceeded":
      return "window";
    case "forbidden":
    case "not_approved":
    case "person_required":
    case "misconfigured":
    case "retries_exhausted":
    case "repeated_failure":
      return "tool";
    case "business_rule":
    case "uncertain_mutation":
    case "partial_success":
      return "call";
    default:
      return "none";
  }
}

/** A stop the proxy remembers. */
export interface RememberedStop {
  readonly reason: Reason;
  readonly scope: Exclude<StopScope, "none">;
  readonly tool: string;
  /** Epoch ms after which it no longer blocks. */
  readonly until: number;
  /** The idempotency key of a write that may have happened. */
  readonly idempotencyKey?: string;
}

export interface StopMemoryOptions {
  /** How long a stop blocks, in ms. */
  readonly ttlMs: number;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
  /**
   * Most stops remembered; the oldest is forgotten first, except a stop that names a key (a write
   * that may have happened), kept until its time is up. @default 1000
   */
  readonly maxEntries?: number;
}

export interface StopMemory {
  /**
   * Remembers a stop of `tool` called with `args`; returns it, or undefined for scope `none`.
   * A `window` stop blocks until `windowEnd` (epoch ms), the others for `ttlMs`. A stop that
   * names an idempotency key (a write that may have happened, whatever stopped it: the host's
   * cancel, a JSON-RPC error after the request went out, the deadline) blocks at least the same
   * call for `ttlMs`: a later run would send the write again under a new key.
   */
  remember(
    reason: Reason,
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
    extra?: { readonly idempotencyKey?: string | undefined; readonly windowEnd?: number },
  ): RememberedStop | undefined;
  /** The remembered stop that blocks this call, if any. */
  blocking(
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
  ): RememberedStop | undefined;
  /** Forgets every stop (e.g. a person fixed the credentials). */
  clear(): void;
  readonly size: number;
}

const SERVER_KEY = "server";

function keyOf(scope: RememberedStop["scope"], tool: string, args: unknown): string {
  if (scope === "server" || scope === "window") return SERVER_KEY;
  if (scope === "tool") return `tool\u0000${tool}`;
  return `call\u0000${tool}\u0000${canonicalJson(args ?? {})}`;
}

/** Remembers stops for `ttlMs`, bounded to `maxEntries`. */
export function createStopMemory(options: StopMemoryOptions): StopMemory {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 1000;
  if (!(options.ttlMs > 0))
    throw new RangeError(`ttlMs must be a positive number of ms, got ${options.ttlMs}`);
  const stops = new Map<string, RememberedStop>();

  const live = (key: string): RememberedStop | undefined => {
    const stop = stops.get(key);
    if (stop === undefined) return undefined;
    if (stop.until > now()) return stop;
    stops.delete(key);
    return undefined;
  };

  const keep = (
    scope: RememberedStop["scope"],
    reason: Reason,
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
    extra: { readonly idempotencyKey?: string | undefined; readonly windowEnd?: number },
  ): RememberedStop => {
    const key = keyOf(scope, tool, args);
    const until =
      scope === "window" && extra.windowEnd !== undefined ? extra.windowEnd : now() + options.ttlMs;
    const stop: RememberedStop = {
      reason,
      scope,
      tool,
      until,
      ...(extra.idempotencyKey !== undefined && { idempotencyKey: extra.idempotencyKey }),
    };
    stops.delete(key);
    stops.set(key, stop);
    if (stops.size > maxEntries) makeRoom();
    return stop;
  };

  /**
   * Forgets expired stops, then the oldest that names no key. A stop of a write that may have
   * happened is kept until its time is up, like the ledger's uncertain keys: forgetting it to make
   * room would let the write be sent again.
   */
  const makeRoom = (): void => {
    const at = now();
    for (const [key, stop] of stops) {
      if (stops.size <= maxEntries) return;
      if (stop.until <= at) stops.delete(key);
    }
    for (const [key, stop] of stops) {
      if (stops.size <= maxEntries) return;
      if (stop.idempotencyKey === undefined) stops.delete(key);
    }
  };

  return {
    remember(reason, tool, args, extra = {}) {
      const named = stopScope(reason);
      const write = extra.idempotencyKey !== undefined;
      if (named === "none" && !write) return undefined;
      const scope = named === "none" ? "call" : named;
      // Only the write itself may have happened: a stop of the whole tool or server names no key,
      // so the other calls it blocks (never sent) are not told that they may have written. The
      // write's own call is kept with its key, for the time to live (past a window's end too).
      const { idempotencyKey: _, ...broad } = extra;
      const stop = keep(scope, reason, tool, args, scope === "call" ? extra : broad);
      if (scope !== "call" && write) keep("call", reason, tool, args, extra);
      return stop;
    },
    blocking(tool, args) {
      // A write that may have happened hears so, even while a broader stop also blocks it.
      const own = live(keyOf("call", tool, args));
      if (own?.idempotencyKey !== undefined) return own;
      return live(SERVER_KEY) ?? live(keyOf("tool", tool, args)) ?? own;
    },
    clear() {
      stops.clear();
    },
    get size() {
      return stops.size;
    },
  };
}

/** What the model reads for a call the proxy answers itself after a stop. */
export function blockedText(stop: RememberedStop): string {
  const what =
    stop.scope === "window"
      ? "This server's tools are paused until the current budget window ends"
      : stop.scope === "server"
        ? "This server's tools are stopped"
        : stop.scope === "tool"
          ? `The tool ${stop.tool} is stopped`
          : `This call of ${stop.tool} was stopped before`;
  // A stop that names a key is a write that may have happened, whatever stopped it (a deadline
  // or a spent budget after an unanswered attempt, say).
  const write =
    stop.reason === "uncertain_mutation" || stop.idempotencyKey !== undefined
      ? " The earlier attempt may have made the change: do not send it again; tell the user it needs checking."
      : "";
  return `${what} (${stop.reason}); calls that would fail the same way are not sent.${write} Do not retry: tell the user what happened and what they need to do.`;
}
