/**
 * What a stop means behind the proxy. A host has no notion of Governor's run, so the proxy
 * remembers each stop for a while, with a scope that says which later calls would fail the same
 * way: those are answered at once, without reaching the server. Pure apart from the clock.
 *
 * A write in doubt is never kept here: the ledger's index of writes in doubt refuses an identical
 * write while its outcome is unknown, in every window of the session and past any time to live
 * (docs/idempotency.md), and a memory bounded in time and size could only forget it sooner.
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
 * - `call`: this tool with the same arguments (a business rule may allow other values);
 * - `none`: nothing (the host cancelled; the next call may well work; a write in doubt, which the
 *   ledger refuses itself).
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
}

export interface StopMemoryOptions {
  /** How long a stop blocks, in ms. */
  readonly ttlMs: number;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
  /** Most stops remembered; the expired, then the oldest, are forgotten first. @default 1000 */
  readonly maxEntries?: number;
}

export interface StopMemory {
  /**
   * Remembers a stop of `tool` called with `args`; returns it, or undefined for scope `none`.
   * A `window` stop blocks until `windowEnd` (epoch ms), the others for `ttlMs`.
   */
  remember(
    reason: Reason,
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
    extra?: { readonly windowEnd?: number },
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

  /** Forgets expired stops, then the oldest. */
  const makeRoom = (): void => {
    const at = now();
    for (const [key, stop] of stops) {
      if (stops.size <= maxEntries) return;
      if (stop.until <= at) stops.delete(key);
    }
    for (const key of stops.keys()) {
      if (stops.size <= maxEntries) return;
      stops.delete(key);
    }
  };

  return {
    remember(reason, tool, args, extra = {}) {
      const scope = stopScope(reason);
      if (scope === "none") return undefined;
      const key = keyOf(scope, tool, args);
      const until =
        scope === "window" && extra.windowEnd !== undefined
          ? extra.windowEnd
          : now() + options.ttlMs;
      const stop: RememberedStop = { reason, scope, tool, until };
      stops.delete(key);
      stops.set(key, stop);
      if (stops.size > maxEntries) makeRoom();
      return stop;
    },
    blocking(tool, args) {
      // Almost always empty: the call's arguments are read (canonicalJson) only when a stop is kept.
      if (stops.size === 0) return undefined;
      return live(SERVER_KEY) ?? live(keyOf("tool", tool, args)) ?? live(keyOf("call", tool, args));
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
  return `${what} (${stop.reason}); calls that would fail the same way are not sent. Do not retry: tell the user what happened and what they need to do.`;
}
