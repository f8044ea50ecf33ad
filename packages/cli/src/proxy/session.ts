/**
 * The proxy's runs: a host has no notion of Governor's run, so one host session gets a run per
 * window of time (budgets, fingerprints and the repeat rule count within it). A stop ends that
 * run; the proxy remembers it (see stops.ts) and answers calls that would fail the same way
 * itself, and the next call starts a fresh run. Failures only the host can handle become JSON-RPC
 * errors for the host, never tool text.
 */
import {
  type Governor,
  GovernorError,
  type HostError,
  type Run,
  type RunOptions,
  withoutKeyArgument,
} from "@governor/core";
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
   * forwarded progress): a host cancel that comes meanwhile leaves the answer unsent, so the run
   * keeps a write's answer in the ledger for the identical call (`ToolCall.beforeAnswer`). Asked
   * for by the run after a success and by the session after any outcome: it waits once.
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

export function createProxySession(options: ProxySessionOptions): ProxySession {
  const now = options.now ?? Date.now;
  const windowMs = options.windowMs ?? options.governor.policy.budgets.wallTimeMs;
  // A call that starts just before its window ends still gets its whole timeout.
  const graceMs = options.timeoutMs ?? 60_000;
  const stopTtlMs = options.stopTtlMs ?? TEN_MINUTES;
  const stops = createStopMemory({ ttlMs: stopTtlMs, now });
  const idempotencyScope = `governor-proxy\u0000${options.server ?? ""}`;
  let run: Run | undefined;
  let startedAt = 0;
  /** Calls out per run; a run the window left behind ends when its last call is answered. */
  const out = new Map<Run, number>();
  const retiring = new Set<Run>();

  const currentRun = (): Run => {
    const inWindow = now() - startedAt < windowMs;
    if (run !== undefined && !run.ended && inWindow) return run;
    // Its calls still out get their whole timeout (the run's deadline has the grace for it):
    // ending the run now would cut them (a write then may have happened).
    if (run !== undefined) {
      if (out.has(run)) retiring.add(run);
      else run.end();
    }
    // A stop ended the window's run: the next run goes on from it in the same window, so no stop
    // refills the window's budgets or its wall time, or resets the repeat rule (`continues`,
    // docs/proxy.md). Otherwise a window starts.
    const from = run !== undefined && inWindow ? run : undefined;
    if (from === undefined) startedAt = now();
    // One scope for every window: a write in doubt in one run refuses an identical write in the
    // next (the core's index of writes in doubt, docs/idempotency.md), whatever ended its run.
    // An answer the host cancelled as it came is kept for the identical call for the stop TTL.
    // Every run of a window ends with it (plus the grace) or with the wall time from its start:
    // the core ends a run at its own start plus the wall time, and a run that goes on from
    // another no later than that one.
    const runOptions: Mutable<RunOptions> = {
      deadline: startedAt + windowMs + graceMs,
      idempotencyScope,
      keptAnswerMs: stopTtlMs,
    };
    if (from !== undefined) runOptions.continues = from;
    run = options.governor.startRun(runOptions);
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

  /**
   * The arguments a remembered stop of a call is keyed by: as Governor compares calls, without the
   * one the tool's idempotency key travels in (`idempotency.argument`), which Governor writes over
   * whatever the call had, so a model that fills it anew is the same call to the stop as it is on
   * the wire and to the ledger.
   */
  const stopArgs = (call: ProxyCall): ProxyCall["arguments"] => {
    const args = call.arguments;
    if (args === undefined) return args;
    return withoutKeyArgument(args, options.governor.toolPolicy(call.name, options.server));
  };

  const callTool = async (call: ProxyCall): Promise<CallToolResult> => {
    const stop = stops.size > 0 ? stops.blocking(call.name, stopArgs(call)) : undefined;
    if (stop !== undefined) return blocked(stop, call.name);
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
    // A cancel in the pause before a success's answer keeps that answer (`ToolCall.beforeAnswer`).
    if (call.beforeAnswer !== undefined) params.beforeAnswer = call.beforeAnswer;
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
    if (outcome.kind === "ok" && outcome.kept === true) {
      // The call went through; its answer will not reach the host (a cancelled request is not
      // answered). Sent again, a write would be made twice: the run kept this answer in the
      // ledger for the identical call, in any window, and after a restart with a store that keeps
      // its data, before it freed the write (`ToolCall.signal`; a read, or an idempotent write, is
      // simply made again).
      options.log?.({
        level: "warning",
        data: { event: "completed_after_cancel", tool: call.name },
      });
    } else if (outcome.kind === "ok" && outcome.replayed) {
      // A proxy's calls carry no host id, and a write that succeeded gets a new key for its next
      // identical call: an answer replayed here is one the ledger kept after a late cancel.
      options.log?.({ level: "info", data: { event: "answered_after_cancel", tool: call.name } });
    }
    if (outcome.kind !== "stop") return toModelResult(outcome);
    if (outcome.hostError !== undefined) throw hostFailure(outcome.hostError, call);
    // The stop memory keeps no write in doubt (stops.ts): the ledger refuses an identical write
    // while one is in doubt, whatever window or time to live. An `uncertain_mutation` stop that
    // names no key is a call not made (the run's reason, borrowed from another write in doubt,
    // or an identical write in doubt refused it): the ledger answers for it too.
    const key = outcome.idempotencyKey;
    const remembered = stops.remember(outcome.reason, call.name, stopArgs(call), { windowEnd });
    options.log?.({
      level: "warning",
      data: {
        event: "stopped",
        tool: call.name,
        reason: outcome.reason,
        scope: remembered?.scope ?? (key !== undefined ? "call" : "none"),
        personResolvable: outcome.personResolvable,
        // Which budget, as the run's summary and metrics name it.
        ...(outcome.reason === "budget_exhausted" &&
          outcome.summary.budget !== undefined && { budget: outcome.summary.budget }),
        ...(outcome.idempotencyKey !== undefined && { idempotencyKey: outcome.idempotencyKey }),
      },
    });
    const [block] = outcome.result.content;
    const tail = remembered
      ? " Calls that would fail the same way will not be sent; tell the user what happened."
      : "";
    return { content: [{ type: "text", text: `${block.text}${tail}` }], isError: true };
  };

  return {
    stops,
    callTool,
    close() {
      run?.end();
      run = undefined;
      for (const old of retiring) old.end();
      retiring.clear();
    },
  };
}
