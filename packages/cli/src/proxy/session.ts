/**
 * The proxy's runs: a host has no notion of Governor's run, so one host session gets a run per
 * window of time (budgets, fingerprints and the repeat rule count within it). A stop ends that
 * run; the proxy remembers it (see stops.ts) and answers calls that would fail the same way
 * itself, and the next call starts a fresh run. Failures only the host can handle become JSON-RPC
 * errors for the host, never tool text.
 */
import { type Governor, GovernorError, type HostError, type Run } from "@governor/core";
import { canonicalJson } from "@governor/core/judge";
import { type GovernedCallParams, type GovernedClient, toModelResult } from "@governor/mcp";
import { type CallToolResult, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { blockedText, createStopMemory, type RememberedStop, type StopMemory } from "./stops.ts";

/** A logging notification for the host (`notifications/message`, logger `governor`). */
export interface ProxyLog {
  readonly level: "info" | "warning" | "error";
  readonly data: Readonly<Record<string, unknown>>;
}

export interface ProxySessionOptions {
  readonly governor: Governor;
  readonly governed: GovernedClient;
  /** The server's name in the policy (`servers.<name>`). */
  readonly server?: string;
  /** Length of one run, in ms. @default the policy's `budgets.wallTimeMs` (10 minutes) */
  readonly windowMs?: number;
  /** How long a stop blocks calls that would fail the same way, in ms. @default 600000 */
  readonly stopTtlMs?: number;
  /** Upper bound of each attempt's timeout. */
  readonly timeoutMs?: number;
  readonly now?: () => number;
  /** Tells the host what happened (a stop, a blocked call). */
  readonly log?: (entry: ProxyLog) => void;
  /** After a call whose outcome may change which tools are available (breakers). */
  readonly onToolsMaybeChanged?: (tool: string) => void;
}

/** One tools/call as the host sent it. */
export interface ProxyCall {
  readonly name: string;
  readonly arguments?: Record<string, unknown>;
  /** The host's `_meta`, passed on to the server (its progress token too). */
  readonly meta?: Readonly<Record<string, unknown>>;
  readonly signal?: AbortSignal;
  /**
   * Awaited once the call's outcome is in, before it is answered (the proxy's pause after
   * forwarded progress): a host cancel that comes meanwhile leaves the answer unsent, so the
   * answer is kept for the identical call (see `callTool`).
   */
  readonly beforeAnswer?: () => Promise<void>;
}

export interface ProxySession {
  /** Governs one tool call; throws a JSON-RPC error (code, message) for the host. */
  callTool(call: ProxyCall): Promise<CallToolResult>;
  /** Ends the current run (`completed` unless it stopped). */
  close(): void;
  readonly stops: StopMemory;
}

/** A JSON-RPC error for the host: the SDK sends `code`, `message` and `data` as they are. */
export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "JsonRpcError";
  }
}

/** A JSON-RPC code for a failure the host handles: the server's own, else an internal error. */
export function hostErrorToJsonRpc(error: HostError): JsonRpcError {
  const code =
    typeof error.failureCode === "number" && Number.isSafeInteger(error.failureCode)
      ? error.failureCode
      : ErrorCode.InternalError;
  // The HostError's message is already redacted by the adapter; the reason tells the host why.
  return new JsonRpcError(code, `governor proxy (${error.reason}): ${error.message}`, {
    reason: error.reason,
    tool: error.tool,
  });
}

const TEN_MINUTES = 600_000;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** What identifies an identical call for an answer kept after a late cancel: tool and arguments. */
function unseenKey(call: ProxyCall): string {
  return `${call.name}\u0000${canonicalJson(call.arguments ?? {})}`;
}

/** The most answers kept for calls the host cancelled after they went through. */
const MAX_UNSEEN = 256;

export function createProxySession(options: ProxySessionOptions): ProxySession {
  const now = options.now ?? Date.now;
  const windowMs = options.windowMs ?? options.governor.policy.budgets.wallTimeMs;
  // A call that starts just before its window ends still gets its whole timeout.
  const graceMs = options.timeoutMs ?? 60_000;
  const stops = createStopMemory({ ttlMs: options.stopTtlMs ?? TEN_MINUTES, now });
  const idempotencyScope = `governor-proxy\u0000${options.server ?? ""}`;
  let run: Run | undefined;
  let startedAt = 0;
  /** Calls out per run; a run the window left behind ends when its last call is answered. */
  const out = new Map<Run, number>();
  const retiring = new Set<Run>();
  /**
   * Results of calls that went through although the host cancelled them (its cancel came while
   * the answer was being recorded): the host gets no answer to a cancelled request, so the next
   * identical call, within the stop TTL, gets this one instead of making the write a second time.
   */
  const unseen = new Map<string, { readonly result: CallToolResult; readonly until: number }>();
  const stopTtlMs = options.stopTtlMs ?? TEN_MINUTES;

  const currentRun = (): Run => {
    if (run !== undefined && !run.ended && now() - startedAt < windowMs) return run;
    // Its calls still out get their whole timeout (the run's deadline has the grace for it):
    // ending the run now would cut them (a write then may have happened).
    if (run !== undefined) {
      if (out.has(run)) retiring.add(run);
      else run.end();
    }
    startedAt = now();
    // One scope for every window: a write in doubt in one run refuses an identical write in the
    // next (the core's index of writes in doubt, docs/idempotency.md), whatever ended its run.
    run = options.governor.startRun({ deadline: startedAt + windowMs + graceMs, idempotencyScope });
    return run;
  };

  const enter = (current: Run): void => {
    out.set(current, (out.get(current) ?? 0) + 1);
  };
  const leave = (current: Run): void => {
    const left = (out.get(current) ?? 1) - 1;
    if (left > 0) {
      out.set(current, left);
      return;
    }
    out.delete(current);
    if (retiring.delete(current)) current.end();
  };

  const blocked = (stop: RememberedStop, tool: string): CallToolResult => {
    options.log?.({
      level: "warning",
      data: { event: "blocked", tool, reason: stop.reason, scope: stop.scope },
    });
    return { content: [{ type: "text", text: blockedText(stop) }], isError: true };
  };

  /**
   * A failure for the host, logged. A write it names a key of (one that may have happened: a
   * JSON-RPC error after the request went out) is not remembered here: the ledger refuses the
   * same call while that key is in doubt, in every window (`scope: "call"` in the log).
   */
  const hostFailure = (hostError: HostError, call: ProxyCall): JsonRpcError => {
    const key = hostError.idempotencyKey;
    options.log?.({
      level: "error",
      data: {
        event: "host_error",
        tool: call.name,
        reason: hostError.reason,
        ...(key !== undefined && { scope: "call", idempotencyKey: key }),
      },
    });
    return hostErrorToJsonRpc(hostError);
  };

  return {
    stops,
    async callTool(call) {
      const stop = stops.blocking(call.name, call.arguments);
      if (stop !== undefined) return blocked(stop, call.name);
      // Almost always empty: the call's content is read only when an answer is kept.
      const kept = unseen.size === 0 ? undefined : unseen.get(unseenKey(call));
      if (kept !== undefined) {
        unseen.delete(unseenKey(call));
        if (kept.until > now()) {
          options.log?.({
            level: "info",
            data: { event: "answered_after_cancel", tool: call.name },
          });
          return kept.result;
        }
      }
      const current = currentRun();
      // The window of this call's run (a later call may start the next one meanwhile).
      const windowEnd = startedAt + windowMs;
      let outcome: Awaited<ReturnType<GovernedClient["callTool"]>>;
      // Built field by field: a conditional spread makes an object per field per call.
      const params: Mutable<GovernedCallParams> = { name: call.name };
      if (call.arguments !== undefined) params.arguments = call.arguments;
      if (call.meta !== undefined) params.meta = call.meta;
      if (call.signal !== undefined) params.signal = call.signal;
      if (options.timeoutMs !== undefined) params.timeoutMs = options.timeoutMs;
      enter(current);
      try {
        outcome = await options.governed.callTool(current, params);
      } catch (error) {
        if (GovernorError.isInstance(error) && error.code === "host_error") {
          throw hostFailure(error as HostError, call);
        }
        throw error;
      } finally {
        leave(current);
        if (call.beforeAnswer !== undefined) await call.beforeAnswer();
      }
      if (outcome.kind !== "ok") options.onToolsMaybeChanged?.(call.name);
      if (
        outcome.kind === "ok" &&
        call.signal?.aborted === true &&
        options.governor.toolPolicy(call.name, options.server).effect !== "read_only"
      ) {
        // The call went through; its answer will not reach the host (a cancelled request is not
        // answered). Sent again, a write would be made twice: the identical call gets this answer.
        // (A read is simply read again.)
        const key = unseenKey(call);
        unseen.delete(key);
        unseen.set(key, { result: outcome.value, until: now() + stopTtlMs });
        if (unseen.size > MAX_UNSEEN) unseen.delete(unseen.keys().next().value as string);
        options.log?.({
          level: "warning",
          data: { event: "completed_after_cancel", tool: call.name },
        });
      }
      if (outcome.kind !== "stop") return toModelResult(outcome);
      if (outcome.hostError !== undefined) throw hostFailure(outcome.hostError, call);
      // The stop memory keeps no write in doubt (stops.ts): the ledger refuses an identical write
      // while one is in doubt, whatever window or time to live. An `uncertain_mutation` stop that
      // names no key is a call not made (the run's reason, borrowed from another write in doubt,
      // or an identical write in doubt refused it): the ledger answers for it too.
      const key = outcome.idempotencyKey;
      const remembered = stops.remember(outcome.reason, call.name, call.arguments, { windowEnd });
      options.log?.({
        level: "warning",
        data: {
          event: "stopped",
          tool: call.name,
          reason: outcome.reason,
          scope: remembered?.scope ?? (key !== undefined ? "call" : "none"),
          personResolvable: outcome.personResolvable,
          ...(outcome.idempotencyKey !== undefined && { idempotencyKey: outcome.idempotencyKey }),
        },
      });
      const [block] = outcome.result.content;
      const tail = remembered
        ? " Calls that would fail the same way will not be sent; tell the user what happened."
        : "";
      return { content: [{ type: "text", text: `${block.text}${tail}` }], isError: true };
    },
    close() {
      run?.end();
      run = undefined;
      for (const old of retiring) old.end();
      retiring.clear();
    },
  };
}
