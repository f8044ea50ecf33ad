// The contracts between a governor and its runs: the hooks' contexts and options a host passes
// to createGovernor, and the shared core a run uses. Apart from governor.ts so that run.ts and
// governor.ts do not import each other.
import type { HostError } from "../errors.ts";
import type { Decision } from "../judge/decide.ts";
import type { Failure } from "../judge/failure.ts";
import type { Policy, ToolPolicy } from "../policy/policy.ts";
import type { Store } from "../store/store.ts";
import type { CallOutcomeKind, GovernorEvent, RunSummary } from "../telemetry/events.ts";
import type { MeterLike } from "../telemetry/telemetry.ts";
import type { Tracing, TracingOptions } from "../telemetry/tracing.ts";
import type { Effect, MaybePromise } from "../types.ts";
import type { BreakerState } from "./breaker.ts";

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
   * Record OpenTelemetry spans: an `execute_tool {tool}` span per `run.call`, one per attempt
   * under it, and the run as their parent when the host has no span of its own
   * (docs/telemetry.md#traces). `false` records none; an object sets the tracer, whether the
   * redacted failure text may reach a span, and the semantic conventions' version.
   * @default true (a no-op until the host registers an SDK; none without `@opentelemetry/api`)
   */
  readonly tracing?: boolean | TracingOptions;
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

/** Shared parts of a governor that runs use. Internal. */
export interface GovernorCore {
  readonly policy: Policy;
  readonly options: GovernorOptions;
  readonly store: Store;
  readonly now: () => number;
  readonly random: () => number;
  toolPolicy(tool: string, server?: string): ToolPolicy;
  emit(event: GovernorEvent): void;
  /** Whether anything receives events: without a listener, none is built. */
  readonly listening: boolean;
  /** The governor's spans, when it traces (decision events are then built for it). */
  readonly tracing?: Tracing | undefined;
  /**
   * Set when the governor's metrics are the only listener: a call's outcome goes to them without
   * a `call` event being built (`listening` is true for the other events).
   */
  readonly callMetric?:
    | ((
        tool: string,
        server: string | undefined,
        outcome: CallOutcomeKind,
        failed: boolean,
      ) => void)
    | undefined;
  breakerKey(tool: string, server: string | undefined): string;
  /**
   * The store is one `createMemoryStore` made: a synchronous answer of it runs no host code, so a
   * clock reading taken before it still holds after it (absent: a host's store, which may be slow).
   */
  readonly ownStore?: boolean;
  /** Synchronous when the store is (the memory store): no promise on the hot path. */
  readBreaker(tool: ToolPolicy): MaybePromise<BreakerState | undefined>;
  /**
   * Counts a first attempt against the server's retry budget window, at `clock.clockAt` (the
   * clock's reading, read there: a number handed over is a heap number per call).
   */
  countCall(server: string | undefined, clock: { readonly clockAt: number }): MaybePromise<unknown>;
  /** Takes one retry from the server's budget; false when it has no room. */
  takeRetry(server: string | undefined): MaybePromise<boolean>;
  /** Longest wait for one store operation, in ms. */
  readonly storeTimeoutMs: number;
  mintKey(parts: readonly string[]): string;
  newRunId(): string;
}
