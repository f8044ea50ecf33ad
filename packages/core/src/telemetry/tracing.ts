// OpenTelemetry spans of a governor's runs, calls and attempts, through `@opentelemetry/api` when it
// is installed (an optional peer, loaded at run time like the metrics'). The run's steps call the
// few hooks of `Tracing`; everything a span says comes from what they already compute: the
// decision events (names bounded, failure texts redacted) and the call's outcome.
import { createRequire } from "node:module";
import { boundName, cutWithHash, MAX_NAME } from "../judge/bound-name.ts";
import type { Action, Reason } from "../types.ts";
import type { CallOutcomeKind, DecisionEvent, RunSummary } from "./events.ts";

/**
 * The version of the OpenTelemetry semantic conventions Governor's spans follow: GenAI
 * `execute_tool` spans, and with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` MCP
 * client spans for attempts sent to an MCP server.
 */
export const SEMCONV_VERSION = "1.39.0";

/** The transition baseline the GenAI conventions name: what is emitted without the opt-in. */
export const SEMCONV_BASELINE = "1.36.0";

/** Span attribute values as Governor sets them. */
export type SpanAttributeValue = string | number | boolean;
/** Span attributes as Governor sets them. */
export type SpanAttributesLike = Readonly<Record<string, SpanAttributeValue>>;

/** The part of an OpenTelemetry `Span` Governor uses. */
export interface SpanLike {
  setAttributes(attributes: SpanAttributesLike): unknown;
  addEvent(name: string, attributes?: SpanAttributesLike): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  isRecording(): boolean;
  end(): void;
}

/** The part of OpenTelemetry's `SpanOptions` Governor passes. */
export interface SpanOptionsLike {
  /** 0 internal, 2 client (OpenTelemetry's `SpanKind`). */
  kind?: number;
  attributes?: SpanAttributesLike;
  /** Epoch ms. */
  startTime?: number;
}

/**
 * The part of an OpenTelemetry `Tracer` Governor uses. A `Tracer` from `@opentelemetry/api`
 * satisfies it; the context is the API's `Context`, opaque here.
 */
export interface TracerLike {
  startSpan(name: string, options?: SpanOptionsLike, context?: unknown): SpanLike;
}

/** Options of a governor's tracing (`createGovernor(policy, { tracing })`). */
export interface TracingOptions {
  /**
   * The tracer to start spans with.
   * @default `trace.getTracer("@governor/core", version)` from `@opentelemetry/api`
   */
  tracer?: TracerLike;
  /**
   * Put a failure's text, redacted as the model reads it, in the span status' message. Off: the
   * message is the reason (a closed set), and no failure text reaches a span.
   * @default false
   */
  errorText?: boolean;
  /**
   * Which semantic conventions to emit: `latest` adds the MCP client conventions to attempts sent
   * to a server. @default `latest` when `OTEL_SEMCONV_STABILITY_OPT_IN` lists
   * `gen_ai_latest_experimental`, else `baseline`
   */
  semconv?: "baseline" | "latest";
}

/** What the run's steps tell the tracing. Internal: set on the governor's core when it traces. */
export interface Tracing {
  runStarted(run: RunRef): void;
  /** A call opened: its span starts; the executor returned runs each attempt in a span of its own. */
  callStarted<C extends AttemptRef, R>(call: CallRef, execute: (ctx: C) => R): (ctx: C) => R;
  /** `run.call`'s promise: the call's span ends when it settles. */
  callSettled<T>(call: CallRef, done: Promise<T>): Promise<T>;
  callOutcome(call: CallRef, outcome: CallOutcomeKind, failed: boolean): void;
  /** Whether the call has a span (a decision event is built for it only then). */
  traces(call: CallRef): boolean;
  decision(call: CallRef, event: DecisionEvent): void;
  runEnded(run: RunRef, summary: RunSummary): void;
}

/** What the tracing reads of a run. */
export interface RunRef {
  readonly id: string;
  readonly budgets: { usedOf(name: "calls" | "failures" | "retries"): number };
}

/** What the tracing reads of a call. */
export interface CallRef {
  readonly run: RunRef;
  readonly call: { readonly tool: string; readonly server?: string; readonly callId?: string };
  readonly seq: number;
  readonly attempts: number;
  readonly key: string | undefined;
}

/** What the tracing reads of an attempt's context. */
export interface AttemptRef {
  readonly attempt: number;
}

interface ContextApi {
  active(): unknown;
  with<A extends unknown[], R>(
    context: unknown,
    fn: (...args: A) => R,
    thisArg?: unknown,
    ...args: A
  ): R;
}

interface TraceApi {
  getTracer(name: string, version?: string): TracerLike;
  getTracerProvider(): {
    getDelegate?(): unknown;
    getTracer(name: string, version?: string): TracerLike;
  };
  getSpan(context: unknown): SpanLike | undefined;
  setSpan(context: unknown, span: SpanLike): unknown;
}

/** The part of `@opentelemetry/api` the tracing uses. */
interface OtelApi {
  readonly context: ContextApi;
  readonly trace: TraceApi;
  readonly ProxyTracerProvider?: new () => { getDelegate(): unknown };
}

const SPAN_KIND_INTERNAL = 0;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;
const TRACER_NAME = "@governor/core";

/** `@opentelemetry/api` and the package's version, or undefined when the API is not installed. */
function loadApi(): { api: OtelApi; version: string | undefined } | undefined {
  try {
    // A static import would make the optional peer dependency mandatory.
    const require = createRequire(import.meta.url);
    const api = require("@opentelemetry/api") as Partial<OtelApi>;
    if (api.context === undefined || api.trace === undefined) return undefined;
    let version: string | undefined;
    try {
      version = (require("../../package.json") as { version?: string }).version;
    } catch {
      version = undefined;
    }
    return { api: api as OtelApi, version };
  } catch {
    return undefined;
  }
}

/** Whether `OTEL_SEMCONV_STABILITY_OPT_IN` asks for the latest GenAI conventions. */
export function latestSemconvFromEnv(value: string | undefined): boolean {
  if (value === undefined) return false;
  return value.split(",").some((v) => v.trim() === "gen_ai_latest_experimental");
}

/** A host-chosen id fit for an attribute: as it is up to 128 characters, else cut with a hash. */
function boundId(id: string): string {
  return id.length <= MAX_NAME ? id : cutWithHash(id, id, MAX_NAME);
}

/**
 * A run started outside any span: its span is made when its first call finds no host span either
 * (started back at the run's start), so a run whose calls all sit under the host's spans has none.
 */
interface RunTrace {
  readonly tracer: TracerLike;
  readonly startedAt: number;
  readonly parent: unknown;
  span: SpanLike | undefined;
  context: unknown;
}

interface CallTrace {
  readonly tracer: TracerLike;
  readonly span: SpanLike;
  readonly context: unknown;
  /** Attempt spans not ended yet, by attempt number. */
  readonly attempts: Map<number, SpanLike>;
  outcome: CallOutcomeKind | undefined;
  observedFailure: boolean;
  last: DecisionEvent | undefined;
}

/** The outcomes of a call that gave the model or the host no usable result. */
function failedOutcome(outcome: CallOutcomeKind | undefined): boolean {
  return outcome === "model" || outcome === "stop" || outcome === "host";
}

/** The action and reason of a call's outcome (`stop` and `model` outcomes carry them). */
function endedAs(value: unknown): { action: Action; reason: Reason } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { kind, action, reason } = value as { kind?: unknown; action?: unknown; reason?: unknown };
  if (typeof reason !== "string") return undefined;
  if (kind === "stop") return { action: "stop", reason: reason as Reason };
  if (kind === "model" && typeof action === "string") {
    return { action: action as Action, reason: reason as Reason };
  }
  return undefined;
}

/** Governor's attributes of a decision (`governor.*`): closed sets, a fingerprint, numbers. */
export function decisionAttributes(event: DecisionEvent): Record<string, SpanAttributeValue> {
  const out: Record<string, SpanAttributeValue> = {
    "governor.action": event.action,
    "governor.reason": event.reason,
    "governor.certainty": event.certainty,
    "governor.fingerprint": event.fingerprint,
    "governor.attempt": event.attempt,
    "governor.idempotency_key.present": event.idempotencyKey !== undefined,
  };
  if (event.cause !== undefined) out["governor.cause"] = event.cause;
  if (event.delayMs !== undefined) out["governor.delay_ms"] = event.delayMs;
  if (event.observed) out["governor.observed"] = true;
  if (event.learned !== undefined) out["governor.learned.from"] = event.learned.from;
  return out;
}

/** The failure's own reason: the cause when a run rule decided. */
function ownReason(event: DecisionEvent): Reason {
  return event.cause ?? event.reason;
}

/**
 * `error.type` of an MCP client span (semantic conventions 1.39.0): the JSON-RPC error code when
 * the server answered one, `tool_error` for a result with `isError`, else Governor's reason.
 */
function mcpErrorType(event: DecisionEvent): { errorType: string; statusCode?: string } {
  const failure = event.input?.failure;
  if (
    failure?.channel === "protocol" &&
    typeof failure.code === "number" &&
    failure.origin !== "local"
  ) {
    const code = String(failure.code);
    return { errorType: code, statusCode: code };
  }
  if (failure?.channel === "tool" && failure.origin !== "local") return { errorType: "tool_error" };
  return { errorType: ownReason(event) };
}

/** The run's spans: one per run without a host span, one per call, one per attempt. */
class GovernorTracing implements Tracing {
  readonly #runs = new WeakMap<RunRef, RunTrace>();
  readonly #calls = new WeakMap<CallRef, CallTrace>();
  /**
   * Runs started while no SDK was registered: their calls make no span (a set lookup per call,
   * not the global provider's). An SDK registered since is used from the next run on.
   */
  readonly #idleRuns = new WeakSet<RunRef>();

  /** The global provider's tracer, and the provider behind it when it was taken. */
  #tracer: TracerLike | undefined = undefined;
  #delegate: unknown = undefined;

  constructor(
    private readonly api: OtelApi,
    /** The tracer the host gave; else the global provider's, looked up as it changes. */
    private readonly given: TracerLike | undefined,
    private readonly version: string | undefined,
    private readonly errorText: boolean,
    private readonly latest: boolean,
    /** The API's no-op provider: behind the global one until an SDK is registered. */
    private readonly noop: unknown,
  ) {}

  /**
   * The tracer to start spans with now, or undefined when no SDK is registered behind the global
   * provider: every span would be a no-op, so none is started (a call costs a lookup, not a span
   * and a context). Looked up per call: a tracer taken from one copy of the API before the SDK was
   * registered (through another copy, or later) would stay a no-op.
   */
  #current(): TracerLike | undefined {
    if (this.given !== undefined) return this.given;
    const provider = this.api.trace.getTracerProvider();
    const delegate = provider.getDelegate?.() ?? provider;
    if (this.noop !== undefined && delegate === this.noop) return undefined;
    if (this.#tracer === undefined || delegate !== this.#delegate) {
      this.#delegate = delegate;
      this.#tracer = provider.getTracer(TRACER_NAME, this.version);
    }
    return this.#tracer;
  }

  runStarted(run: RunRef): void {
    const tracer = this.#current();
    if (tracer === undefined) {
      this.#idleRuns.add(run);
      return;
    }
    const active = this.api.context.active();
    // Under the host's span the run's calls nest under the host's spans: no span of its own.
    if (this.api.trace.getSpan(active) !== undefined) return;
    this.#runs.set(run, {
      tracer,
      startedAt: Date.now(),
      parent: active,
      span: undefined,
      context: undefined,
    });
  }

  /** The context of the run's span, made on first use; undefined when the run has none. */
  #runContext(run: RunRef): unknown {
    const trace = this.#runs.get(run);
    if (trace === undefined) return undefined;
    if (trace.span === undefined) {
      trace.span = trace.tracer.startSpan(
        "governor.run",
        {
          kind: SPAN_KIND_INTERNAL,
          attributes: { "governor.run.id": boundId(run.id) },
          startTime: trace.startedAt,
        },
        trace.parent,
      );
      trace.context = this.api.trace.setSpan(trace.parent, trace.span);
    }
    return trace.context;
  }

  callStarted<C extends AttemptRef, R>(call: CallRef, execute: (ctx: C) => R): (ctx: C) => R {
    if (this.#idleRuns.has(call.run)) return execute;
    const tracer = this.#current();
    if (tracer === undefined) return execute;
    const { api } = this;
    const active = api.context.active();
    const parent =
      api.trace.getSpan(active) !== undefined ? active : (this.#runContext(call.run) ?? active);
    const tool = boundName(call.call.tool);
    const attributes: Record<string, SpanAttributeValue> = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool,
      "governor.run.id": boundId(call.run.id),
      "governor.call": call.seq,
    };
    if (call.call.callId !== undefined)
      attributes["gen_ai.tool.call.id"] = boundId(call.call.callId);
    if (call.call.server !== undefined) attributes["governor.server"] = boundName(call.call.server);
    const span = tracer.startSpan(
      `execute_tool ${tool}`,
      { kind: SPAN_KIND_INTERNAL, attributes },
      parent,
    );
    if (!span.isRecording()) return execute;
    const trace: CallTrace = {
      tracer,
      span,
      context: api.trace.setSpan(parent, span),
      attempts: new Map(),
      outcome: undefined,
      observedFailure: false,
      last: undefined,
    };
    this.#calls.set(call, trace);
    return (ctx: C): R => this.#attempt(call, trace, tool, execute, ctx);
  }

  /** One attempt in a span of its own, the executor running in its context. */
  #attempt<C extends AttemptRef, R>(
    call: CallRef,
    trace: CallTrace,
    tool: string,
    execute: (ctx: C) => R,
    ctx: C,
  ): R {
    const n = ctx.attempt;
    const mcp = this.latest && call.call.server !== undefined;
    const attributes: Record<string, SpanAttributeValue> = { "governor.attempt": n };
    if (mcp) {
      attributes["mcp.method.name"] = "tools/call";
      attributes["gen_ai.operation.name"] = "execute_tool";
      attributes["gen_ai.tool.name"] = tool;
    }
    const span = trace.tracer.startSpan(
      mcp ? `tools/call ${tool}` : `governor.attempt ${tool}`,
      { kind: mcp ? SPAN_KIND_CLIENT : SPAN_KIND_INTERNAL, attributes },
      trace.context,
    );
    // An earlier attempt's span still open (no decision ended it) ends as this one starts.
    for (const earlier of [...trace.attempts.keys()]) this.#endAttempt(trace, earlier);
    trace.attempts.set(n, span);
    // Ended by its decision, the next attempt or the call's end: a success is known as one only
    // once the call is judged, and a cut attempt's executor may never settle.
    return this.api.context.with(
      this.api.trace.setSpan(trace.context, span),
      execute,
      undefined,
      ctx,
    );
  }

  #endAttempt(trace: CallTrace, n: number): void {
    const span = trace.attempts.get(n);
    if (span === undefined) return;
    trace.attempts.delete(n);
    span.end();
  }

  callSettled<T>(call: CallRef, done: Promise<T>): Promise<T> {
    const trace = this.#calls.get(call);
    if (trace === undefined) return done;
    return done.then(
      (value) => {
        this.#endCall(call, trace, value, false);
        return value;
      },
      (error: unknown) => {
        this.#endCall(call, trace, undefined, true);
        throw error;
      },
    );
  }

  callOutcome(call: CallRef, outcome: CallOutcomeKind, failed: boolean): void {
    const trace = this.#calls.get(call);
    if (trace === undefined) return;
    trace.outcome = outcome;
    trace.observedFailure = failed;
  }

  traces(call: CallRef): boolean {
    return this.#calls.has(call);
  }

  decision(call: CallRef, event: DecisionEvent): void {
    const trace = this.#calls.get(call);
    if (trace === undefined) return;
    trace.last = event;
    const attributes = decisionAttributes(event);
    const span = event.attempt > 0 ? trace.attempts.get(event.attempt) : undefined;
    if (span === undefined) {
      // Refused before any attempt (a budget, the breaker, the policy): the call's own event.
      trace.span.addEvent("governor.decision", attributes);
      return;
    }
    const mcp = this.latest && call.call.server !== undefined;
    const error = mcp ? mcpErrorType(event) : { errorType: ownReason(event) };
    span.setAttributes({
      ...attributes,
      "error.type": error.errorType,
      ...(error.statusCode !== undefined && { "rpc.response.status_code": error.statusCode }),
    });
    span.setStatus({ code: STATUS_ERROR, message: this.#message(event) });
    this.#endAttempt(trace, event.attempt);
  }

  /** A status message: the redacted failure text when allowed, else the reason. */
  #message(event: DecisionEvent): string {
    const text = event.input?.failure.text;
    return this.errorText && text !== undefined ? text : ownReason(event);
  }

  #endCall(call: CallRef, trace: CallTrace, value: unknown, thrown: boolean): void {
    this.#calls.delete(call);
    for (const n of [...trace.attempts.keys()]) this.#endAttempt(trace, n);
    const { span, last, outcome } = trace;
    const { budgets } = call.run;
    const attributes: Record<string, SpanAttributeValue> = {
      "governor.attempts": call.attempts,
      "governor.idempotency_key.present": call.key !== undefined,
      "governor.budget.calls": budgets.usedOf("calls"),
      "governor.budget.failures": budgets.usedOf("failures"),
      "governor.budget.retries": budgets.usedOf("retries"),
    };
    if (outcome !== undefined) attributes["governor.outcome"] = outcome;
    if (trace.observedFailure) attributes["governor.observed"] = true;
    if (!failedOutcome(outcome) && !thrown) {
      span.setAttributes(attributes);
      span.end();
      return;
    }
    // What the call came to: the outcome's action and reason (a stop before any attempt has no
    // decision event), else the last decision's.
    const ended = endedAs(value);
    const action = ended?.action ?? last?.action;
    const reason = ended?.reason ?? last?.reason;
    if (action !== undefined) attributes["governor.action"] = action;
    if (reason !== undefined) attributes["governor.reason"] = reason;
    if (last !== undefined) {
      attributes["governor.certainty"] = last.certainty;
      attributes["governor.fingerprint"] = last.fingerprint;
      if (last.cause !== undefined) attributes["governor.cause"] = last.cause;
    }
    // A closed set: Governor's reason, or what ended the call without one.
    const errorType = reason ?? outcome ?? "_OTHER";
    attributes["error.type"] = errorType;
    span.setAttributes(attributes);
    span.setStatus({
      code: STATUS_ERROR,
      message: last !== undefined && last.reason === reason ? this.#message(last) : errorType,
    });
    span.end();
  }

  runEnded(run: RunRef, summary: RunSummary): void {
    const trace = this.#runs.get(run);
    if (trace === undefined) return;
    this.#runs.delete(run);
    const { span } = trace;
    if (span === undefined) return;
    const attributes: Record<string, SpanAttributeValue> = {
      "governor.run.reason": summary.reason,
      "governor.run.calls": summary.calls,
      "governor.run.attempts": summary.attempts,
      "governor.run.failures": summary.failures,
      "governor.run.retries": summary.retries,
      "governor.run.person_resolvable": summary.personResolvable,
    };
    if (summary.budget !== undefined) attributes["governor.budget"] = summary.budget;
    if (summary.observeOnly) attributes["governor.observed"] = true;
    span.setAttributes(attributes);
    if (summary.reason !== "completed") {
      span.setStatus({ code: STATUS_ERROR, message: summary.reason });
    }
    span.end();
  }
}

/**
 * A governor's tracing, or undefined when it has nothing to trace with: `@opentelemetry/api` is
 * not installed. Internal: `createGovernor`'s `tracing` option.
 */
export function createTracing(
  options: TracingOptions,
  env: string | undefined = process.env.OTEL_SEMCONV_STABILITY_OPT_IN,
): Tracing | undefined {
  const loaded = loadApi();
  if (loaded === undefined) return undefined;
  const { api, version } = loaded;
  const latest =
    options.semconv === undefined ? latestSemconvFromEnv(env) : options.semconv === "latest";
  let noop: unknown;
  if (options.tracer === undefined && typeof api.ProxyTracerProvider === "function") {
    try {
      // A fresh proxy hands out the API's one no-op provider: the global one's, until an SDK is set.
      noop = new api.ProxyTracerProvider().getDelegate();
    } catch {
      noop = undefined;
    }
  }
  return new GovernorTracing(
    api,
    options.tracer,
    version,
    options.errorText === true,
    latest,
    noop,
  );
}
