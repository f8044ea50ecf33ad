// The run's public contracts: the options, a call as the agent asked for it, what an executor
// receives and how a call ends. Apart from the run's modules so that each can import them.

import type { HostError } from "../errors.ts";
import type { Decision } from "../judge/decide.ts";
import type { ToolAnnotations } from "../judge/effect.ts";
import type { Failure } from "../judge/failure.ts";
import type { RunSummary } from "../telemetry/events.ts";
import type { Reason } from "../types.ts";

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
  /**
   * Learning from outcomes for this run (docs/learning.md). `scope`: what the run learns, and the
   * learned records it reads, are kept apart under this name (a tenant), so one tenant's failures
   * never demote another's decisions. A string of 1 to 128 characters (any characters: it is
   * URI-encoded in the key); `startRun` throws `invalid_options` on anything else.
   * @default the tenant prefix of `idempotencyScope` (before its first `:`), else none: shared
   */
  readonly learning?: { readonly scope?: string };
  /**
   * How long an answer the run keeps for a write whose call was given up on as it succeeded (its
   * `ToolCall.signal` aborted before the answer was handed over) is given to the next identical
   * call, in ms: a positive finite number (`startRun` throws `invalid_options` on anything else).
   * @default 600000 (10 minutes, as `Run.keepAnswer`)
   */
  readonly keptAnswerMs?: number;
  /**
   * The run this one goes on from, in the same task: a run a stop ended while the task goes on
   * (the proxy's next run in a window, docs/proxy.md). This run starts with what that run, and
   * whatever it went on from, spent of every counted budget (calls, failures, retries,
   * corrections, switches) and with the model's repeat counts (the same failure told to the model
   * again still ends in `repeated_failure` at the tool's `maxRepeats`), and it ends no later than
   * that run's deadline: a stop refills no budget, no wall time and no repeat count. Its summary
   * still counts only its own calls, and its loop detection starts afresh. A run this governor
   * started, that has ended and that no other run goes on from yet (`startRun` throws
   * `invalid_options` on anything else).
   */
  readonly continues?: Run;
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
   * flight, wakes a backoff at once and ends the run with `aborted`. Aborted once a write's
   * attempt succeeded, before the answer is handed over (while the success is recorded, or in
   * `beforeAnswer`): the answer will not reach the model, so the run keeps it in the ledger for
   * the next identical call, as `Run.keepAnswer` does, before it frees the write's entry (the
   * outcome says `kept: true`), and that call is answered with it instead of making the write again.
   */
  readonly signal?: AbortSignal;
  /**
   * Awaited once an attempt succeeded, before the answer is handed over: the host's own moment
   * between a success and giving its answer on (e.g. a proxy's pause after forwarding progress),
   * in which an abort of `signal` still counts as the answer not reaching the model (see `signal`).
   * Bounded as the other host hooks are (the run's deadline, its signal and end, this call's
   * signal): one that outlasts them is no longer waited for. What it throws is ignored.
   */
  readonly beforeAnswer?: () => Promise<void>;
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
  /**
   * Calls `listener` once, with the reason `signal` aborts with, when the attempt is cut (the
   * run's signal, its end or deadline, or the call's signal); at once when it already was cut or
   * has ended. Makes no `AbortSignal` (on Node 20 one costs about 5 µs): for an executor that only
   * needs to be told, such as an adapter cancelling its SDK's request. Listeners are dropped when
   * the attempt ends; one that throws is ignored.
   */
  onAbort(listener: (reason: unknown) => void): void;
  /** Ms left before the run's deadline. */
  readonly remainingMs: number;
  /** The call's idempotency key (mutating tools), the same for every attempt of the call. */
  readonly idempotencyKey: string | undefined;
  /** The arguments to send, with the key in the policy's key argument when it names one. */
  readonly args: Readonly<Record<string, unknown>>;
  /** `_meta` to send: carries the key as `io.governor/idempotency-key`. */
  readonly meta: Readonly<Record<string, unknown>>;
  /**
   * Marks the attempt as not sent while `wait` runs (e.g. a reconnect it waits for before it
   * sends anything), and answers `wait`. An attempt cut meanwhile (an abort, the deadline) left
   * nothing on the wire: it is recorded as not sent (its key released, not left in doubt) and the
   * call stops at once, as do later calls of the run. So is one whose run a stop Governor decided
   * ended meanwhile, once `wait` is done; either way the answer rejects, so the executor never
   * goes on to send.
   */
  beforeSending<R>(wait: Promise<R>): Promise<R>;
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
      /**
       * The call's signal aborted after the write succeeded, before its answer was handed over:
       * the answer is kept in the ledger for the next identical call (see `ToolCall.signal`).
       */
      readonly kept?: true;
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
       * The call's idempotency key when the write may have happened: an `uncertain_mutation`
       * stop, or any stop after an attempt whose outcome was unknown (an abort, the run's end,
       * the deadline, the store, the host). A person who checked settles it with
       * `governor.settle(key, …)`.
       */
      readonly idempotencyKey?: string;
    };

/** One agent task. */
export interface Run {
  readonly id: string;
  /** Whether the run has ended (stopped or ended by the host). */
  readonly ended: boolean;
  /**
   * Aborts once no call of the run may go on: the run ended (a stop, `run.end()`), its signal
   * aborted, or its deadline passed (not in observe-only mode, which enforces none). For an
   * adapter's own waits around a call (a tool listing): they end with the run. Made on first read.
   */
  readonly signal: AbortSignal;
  /**
   * Makes one tool call through Governor; always resolves with an outcome (see `onHostError`).
   * Call it on the run: the methods of a run are not bound.
   */
  call<T>(call: ToolCall, execute: Executor<T>): Promise<CallOutcome<T>>;
  /**
   * Keeps the answer of a call that went through but never reached the model (the host cancelled
   * the request as it was answered, a connection to the host that dropped), in the store's ledger:
   * the next identical call of the run's idempotency scope (same server, tool and canonical
   * arguments; this run instance's without a scope), in this run or another, in this process or
   * another sharing the store (also after a restart, with a store that keeps its data), is answered
   * with it (`replayed: true`) instead of making the write again, once, within `ttlMs`. Only a
   * `mutating` call's answer is kept (a read or an idempotent write is simply made again), and
   * none while an identical write is in flight or in doubt (that write is the repeat), nor by a
   * run without a scope once it ended, nor in observe-only (no identical call can meet it); for a
   * tool with `idempotency.replay: false` the write is kept from being made again but no answer is
   * written (the identical call is answered with `value` undefined, as its key's replay). Answers
   * whether it was kept; a store that fails rejects with its `StoreError`. Pass `call` as it was
   * passed to {@link Run.call}: its tool, server, arguments and annotations find the write. An
   * adapter offers its own (`GovernedClient.keepAnswer` in `@governor/mcp`). Not bound, like `call`.
   * @param ttlMs how long the answer is given, in ms, a positive number @default 600000 (10 min)
   * @example
   * const outcome = await run.call(call, execute);
   * if (outcome.kind === "ok" && cancelledMeanwhile) await run.keepAnswer(call, outcome.value);
   */
  keepAnswer(call: ToolCall, answer: unknown, ttlMs?: number): Promise<boolean>;
  /** Ends the run (`completed` unless it stopped before) and returns its summary. Idempotent. */
  end(): RunSummary;
  /** A snapshot of the summary so far. */
  summary(): RunSummary;
}
