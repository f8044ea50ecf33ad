import {
  type AttemptContext,
  type CallOutcome,
  type Governor,
  GovernorError,
  HostError,
  type Run,
  type ToolAnnotations,
  type ToolCall,
} from "@governor/core";
import { redact, replayedText } from "@governor/core/judge";
import type { CallToolResult, Progress, Tool } from "@modelcontextprotocol/sdk/types.js";
import { deliverableResult } from "./deliverable.ts";
import { transportErrorText } from "./host-text.ts";
import { listAllTools, MAX_TOOL_PAGES, type ToolListing } from "./list-tools.ts";
import { type CallSiteFacts, isSessionGone, mapSdkError } from "./map-error.ts";
import { PlainAbortSignal } from "./plain-signal.ts";
import type { RetryAfterFetch } from "./retry-after.ts";
import { type CallOptions, type McpClient, toolWire, type WireParams } from "./sdk.ts";
import { createSession, type SessionEntry } from "./session.ts";

/** Options of {@link governClient}. */
export interface GovernClientOptions {
  readonly governor: Governor;
  /** The server's name in the policy (`servers.<name>`): its settings and `trustAnnotations` apply. */
  readonly server?: string;
  /**
   * Upper bound of one attempt's timeout; the run's remaining time lowers it (not in
   * observe-only mode, which enforces no deadline). Also bounds one tool listing (all its
   * pages). A positive number of ms (else a `GovernorError` `invalid_options`), at most
   * 2^31 - 1 (a longer one is taken as that). @default 60000
   */
  readonly requestTimeoutMs?: number;
  /**
   * Upper bound of one reconnect: waiting for the calls still out on an expired session, closing
   * it, and the `reconnect` hook (spawning a stdio server can take seconds). @default
   * `requestTimeoutMs`, at least 30000; checked and capped as `requestTimeoutMs` is
   */
  readonly reconnectTimeoutMs?: number;
  /**
   * Connects the client to a new transport (`client.connect(new StdioClientTransport(…))`) after
   * the connection closed or an HTTP session expired. Before the next attempt, the adapter lets
   * the calls still out on an expired session get their own answers, closes the old transport,
   * then calls this, one reconnect at a time for all calls. Only the calls the run may repeat are
   * attempted again: read-only, idempotent, keyed, or never sent.
   *
   * Bounded by `reconnectTimeoutMs` (and each waiting call by its attempt's signal: the run's
   * abort and deadline); the `signal` aborts when that time is up: stop connecting then. A reconnect that throws or times
   * out means nothing was sent: the calls waiting for it fail as `not_connected` (certainty
   * `not_sent`; the host's `session_expired`).
   */
  readonly reconnect?: (signal: AbortSignal) => Promise<void>;
  /** Captures HTTP `Retry-After` headers (see `captureRetryAfter`). */
  readonly retryAfter?: RetryAfterFetch;
  /**
   * Transport trouble no call reports: the client's `onerror` (a non-JSON line on stdout, an SSE
   * stream dropped, an answer that came after its request timed out), a connection that closes
   * while calls are in flight, a tool list cut short. Never shown to the model. The `message` is
   * redacted with the policy's redaction settings, and a report quoting a whole JSON-RPC message
   * (a late answer carries the tool's output) is reduced to the message id, without `cause`.
   * It runs inside the SDK's own `onclose` and `onerror` handlers: what it throws is dropped.
   */
  readonly onTransportError?: (error: HostError) => void;
}

/** One tool call as the model asked for it. */
export interface GovernedCallParams {
  readonly name: string;
  readonly arguments?: Record<string, unknown>;
  /** The host's tool-call id (identifies the logical call for idempotency). */
  readonly callId?: string;
  /**
   * Upper bound of each attempt's timeout for this call, a positive number of ms (else `callTool`
   * rejects with a `GovernorError` `invalid_options`). @default options.requestTimeoutMs
   */
  readonly timeoutMs?: number;
  /**
   * This call's own signal (e.g. your agent SDK's abort signal): aborting it aborts the attempt in
   * flight, a reconnect it waits for, its backoff and the tool listing after an unknown tool, and
   * ends the run with `aborted`.
   */
  readonly signal?: AbortSignal;
  /**
   * The caller's own `_meta` for the request (e.g. a proxy passing on its host's). Sent with
   * every attempt; Governor's idempotency key is added to it and wins over a caller's key of the
   * same name. A `progressToken` here is sent as it is (the caller handles the server's progress
   * notifications itself) unless `onprogress` is given: then the SDK sets its own token.
   */
  readonly meta?: Readonly<Record<string, unknown>>;
  /** Receives the server's progress notifications for this call (the SDK sets the token). */
  readonly onprogress?: (progress: Progress) => void;
  /**
   * Awaited once the call succeeded, before its answer is handed over (`ToolCall.beforeAnswer`):
   * an abort of `signal` until its end keeps the answer for the next identical call (the
   * outcome says `kept: true`).
   */
  readonly beforeAnswer?: () => Promise<void>;
}

/**
 * An MCP client whose tool calls go through Governor runs. `C` is the client given to
 * {@link governClient}: a `Client` of `@modelcontextprotocol/sdk` 1.32 or of
 * `@modelcontextprotocol/client` 2.x.
 */
export interface GovernedClient<C extends McpClient = McpClient> {
  readonly client: C;
  /**
   * Calls a tool through the run; always resolves with an outcome (a failure only the host can
   * handle goes to `onHostError`, or is thrown as `HostError` without that hook). Hand
   * {@link toModelResult} of it to the model.
   */
  callTool(run: Run, params: GovernedCallParams): Promise<CallOutcome<CallToolResult>>;
  /**
   * Keeps the result of a call that went through but never reached the host (it cancelled the
   * request as it was answered), in the store's ledger, for the next identical call of the run's
   * scope, once, within `ttlMs` (see `Run.keepAnswer`): with a store that keeps its data, a repeat
   * after a restart is answered with it rather than made again. `params` as passed to `callTool`.
   * Answers whether it was kept (only a `mutating` tool's is).
   */
  keepAnswer(
    run: Run,
    params: GovernedCallParams,
    result: CallToolResult,
    ttlMs?: number,
  ): Promise<boolean>;
  /**
   * Lists tools, hiding those whose breaker is open and those the policy denies. Reads at most
   * 100 pages, never the same cursor twice, all within `requestTimeoutMs` and `options.signal`.
   */
  listTools(options?: { readonly signal?: AbortSignal }): Promise<Tool[]>;
}

/** What to hand the model for an outcome: the tool's result, or Governor's `isError` text. */
export function toModelResult(outcome: CallOutcome<CallToolResult>): CallToolResult {
  if (outcome.kind === "ok") return outcome.value;
  return { content: [...outcome.result.content], isError: true };
}

type MutableFacts = { -readonly [K in keyof CallSiteFacts]: CallSiteFacts[K] };

/** The code of the SDK's `Connection closed` (both generations' JSON-RPC `-32000`). */
const CONNECTION_CLOSED_CODE = -32000;

/** The least time a reconnect gets by default. */
const MIN_RECONNECT_MS = 30_000;

/** Why a tool listing stopped early, for the host. */
const CUT_TEXT: Record<NonNullable<ToolListing["cut"]>, string> = {
  pages: `tools/list: stopped after ${MAX_TOOL_PAGES} pages, the server kept sending a next cursor`,
  repeated_cursor: "tools/list: stopped at a cursor the server had sent before",
  time: "tools/list: stopped when its time ran out, with the pages read so far",
  stopped: "tools/list: stopped when the run ended, with the pages read so far",
};

/** How many tool names a `switch_tool` text lists. */
const MAX_LISTED_TOOLS = 30;
/** Longest tool name quoted to the model (MCP names are at most 128 characters by SEP-986). */
const MAX_TOOL_NAME_LENGTH = 128;

/**
 * Wraps an `@modelcontextprotocol/sdk` client so that tool calls go through a Governor run.
 * Each attempt gives the SDK a signal of its own that the run aborts through `ctx.onAbort` (an
 * {@link PlainAbortSignal}: no AbortSignal made on the success path, and the abort listener SDK 1.32
 * never removes dies with the attempt), a timeout from the run's remaining time, and the
 * idempotency key in `_meta`. Failures are tagged `local` or
 * `peer` where they happen, from what the adapter saw of the attempt.
 * @example
 * const governed = governClient(client, { governor, server: "notes" });
 * const outcome = await governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
 * messages.push({ role: "tool", content: toModelResult(outcome) });
 */
export function governClient<C extends McpClient>(
  client: C,
  options: GovernClientOptions,
): GovernedClient<C> {
  const { governor, server } = options;
  if (typeof governor?.startRun !== "function" || typeof governor.toolPolicy !== "function") {
    throw invalidOption("governor must be a Governor (createGovernor())");
  }
  if (options.reconnect !== undefined && typeof options.reconnect !== "function") {
    throw invalidOption(`reconnect must be a function, got ${typeof options.reconnect}`);
  }
  const maxTimeout = timeoutOption("requestTimeoutMs", options.requestTimeoutMs) ?? 60_000;
  const reconnectMs = timeoutOption("reconnectTimeoutMs", options.reconnectTimeoutMs);
  const wire = toolWire(client);
  const annotations = new Map<string, ToolAnnotations>();
  // The tools as last listed: a 2.x client checks a success against its output schema, and the
  // input schema weighs a failure's text (issue 12.3).
  const definitions = new Map<string, Tool>();
  let listed = false;
  let lazyListTried = false;
  let closes = 0;

  const redactText = (text: string): string => {
    const { maxLength, emails, patterns } = governor.policy.redaction;
    return redact(text, { maxLength, emails, patterns });
  };
  /** A tool name the server listed, for the model: the policy's redaction, capped. */
  const redactName = (name: string): string => {
    const { emails, patterns } = governor.policy.redaction;
    return redact(name, { maxLength: MAX_TOOL_NAME_LENGTH, emails, patterns });
  };
  const session = createSession(client, {
    reconnect: options.reconnect,
    limitMs: reconnectMs ?? Math.max(maxTimeout, MIN_RECONNECT_MS),
    describe: (error) => redactText(error instanceof Error ? error.message : String(error)),
  });

  /**
   * Hands a report to the host's `onTransportError`. The hook runs inside the SDK's own handlers:
   * what it throws is dropped, since thrown from `onclose` the SDK would never reject the calls it
   * had out (they would wait for the run's deadline), and from a timer it would end the process.
   */
  const report = (error: HostError): void => {
    try {
      options.onTransportError?.(error);
    } catch {
      // A host hook must not break the client.
    }
  };

  const transportError = (reason: string, message: string, cause: unknown, code?: number) =>
    new HostError({
      tool: "",
      server,
      reason,
      channel: "local",
      ...(code !== undefined && { failureCode: code }),
      message,
      cause,
    });

  const previousClose = client.onclose;
  client.onclose = () => {
    closes += 1;
    previousClose?.();
    const inFlight = session.inFlight();
    if (inFlight > 0) {
      report(
        transportError(
          "connection_closed",
          `Connection closed with ${inFlight} call(s) in flight`,
          undefined,
          CONNECTION_CLOSED_CODE,
        ),
      );
    }
  };
  // An error the transport reports and then rejects a call with reaches the host through the
  // call; only the ones no call claims by the next turn of the event loop are forwarded here.
  const unclaimed = new Set<unknown>();
  const previousError = client.onerror;
  client.onerror = (error: Error) => {
    previousError?.(error);
    if (!options.onTransportError) return;
    unclaimed.add(error);
    setImmediate(() => {
      if (!unclaimed.delete(error)) return;
      const text = transportErrorText(String(error?.message), redactText);
      report(transportError("transport_error", text.message, text.keepCause ? error : undefined));
    });
  };

  /** One page request, counted on the session (a reconnect waits for it) and marking a 404. */
  const around = async <T>(request: () => Promise<T>): Promise<T> => {
    const transport = client.transport;
    const entry = session.enter(transport);
    try {
      return await request();
    } catch (error) {
      unclaimed.delete(error);
      if (isSessionGone(error)) session.gone(transport);
      throw error;
    } finally {
      session.leave(entry);
    }
  };

  const readTools = async (
    timeoutMs: number,
    signals: readonly (AbortSignal | undefined)[],
    stop?: () => boolean,
  ): Promise<Tool[]> => {
    const listing: ToolListing = await listAllTools(wire.listPage, {
      timeoutMs,
      signals,
      stop,
      around,
    });
    if (listing.cut !== undefined) {
      report(transportError("transport_error", CUT_TEXT[listing.cut], undefined));
    }
    const tools = listing.tools;
    annotations.clear();
    definitions.clear();
    for (const tool of tools) {
      if (tool.annotations) annotations.set(tool.name, tool.annotations);
      definitions.set(tool.name, tool);
    }
    listed = true;
    const unavailable = new Set(
      await governor.unavailableTools(
        tools.map((t) => t.name),
        server,
      ),
    );
    return tools.filter(
      (t) => !unavailable.has(t.name) && governor.toolPolicy(t.name, server).access !== "deny",
    );
  };

  const listTools = (listOptions: { readonly signal?: AbortSignal } = {}): Promise<Tool[]> =>
    readTools(maxTimeout, [listOptions.signal]);

  /**
   * One pass on the wire: its {@link Pass} is the signal the SDK gets (aborted by the run through
   * `ctx.onAbort`: the listener SDK 1.32 adds to it and never removes dies with the pass) and its
   * entry on the session. Made once per client, like every helper below: a call makes only the
   * closures `run.call` needs (its executor and `toFailure`), the one the run aborts the pass
   * through and the pass's two settle handlers; no async frame of its own. Unless the answer needs
   * a check (1.32, a tool with an output schema), the run gets the SDK's promise itself.
   */
  const pass = (call: CallState, ctx: AttemptContext, limit: number): Promise<CallToolResult> => {
    const params = call.params;
    const transport = client.transport;
    const signal = new Pass(params.name, transport, closes, limit);
    call.pass = signal;
    ctx.onAbort((reason) => signal.abort(reason));
    const request: WireParams = { name: params.name, arguments: { ...ctx.args } };
    const meta = requestMeta(params.meta, ctx.meta, params.onprogress !== undefined);
    if (meta !== undefined) request._meta = meta;
    const onprogress = params.onprogress;
    const bounds: CallOptions =
      onprogress === undefined
        ? { signal: signal.asSignal(), timeout: limit }
        : { signal: signal.asSignal(), timeout: limit, onprogress };
    signal.entry = session.enter(transport);
    let sent: Promise<unknown>;
    try {
      const { retryAfter } = options;
      const def = definitions.get(params.name);
      // The pass keeps the Retry-After of its own requests' responses (retry-after.ts).
      sent =
        retryAfter === undefined
          ? wire.callTool(request, bounds, def)
          : retryAfter.within(signal, () => wire.callTool(request, bounds, def));
    } catch (error) {
      sent = Promise.reject(error);
    }
    if (wire.checks(params.name)) return sent.then(signal.answered, signal.failed);
    // No check to make: the run gets the SDK's own promise (one reaction less between the answer
    // and the outcome). The pass's bookkeeping reacts to it first (its reactions were added
    // before the run's), so the session is left, and a failure's facts are set, before the run
    // reads them.
    sent.then(signal.left, signal.noted);
    return sent as Promise<CallToolResult>;
  };

  /** What a pass that failed saw, for `toFailure`; the session told of a gone session. */
  const notePassFailure = (signal: Pass, error: unknown): void => {
    if (signal.entry !== undefined) session.leave(signal.entry);
    unclaimed.delete(error);
    if (isSessionGone(error)) {
      // The server refused it for a gone session (or it never left): nothing ran, whatever
      // aborted meanwhile.
      signal.gone = true;
      session.gone(signal.transport);
      return;
    }
    // The SDK drops its transport before it rejects pending calls with -32000, so this holds
    // even when the host replaced the onclose handler.
    signal.connectionClosed = closes > signal.closesBefore || client.transport !== signal.transport;
  };

  /** `notePassFailure`, then the error rethrown (the pass's promise rejects with it). */
  const failedPass = (signal: Pass, error: unknown): never => {
    notePassFailure(signal, error);
    throw error;
  };

  /**
   * One attempt's pass on the wire, and what the adapter saw of it. It is the signal the SDK gets
   * (a {@link PlainAbortSignal}), its count on the session, and the facts `toFailure` reads: one
   * object per pass, and the two settle handlers it is watched with.
   */
  class Pass extends PlainAbortSignal {
    entry: SessionEntry | undefined;
    connectionClosed = false;
    /** The server refused the pass for a gone session: nothing ran. */
    gone = false;
    /** The `Retry-After` of the pass's failed HTTP response, with a `retryAfter` capture. */
    retryAfterMs: number | undefined = undefined;
    constructor(
      /** The tool called (its result is checked as the SDK's `Client.callTool` would). */
      readonly name: string,
      readonly transport: McpClient["transport"],
      readonly closesBefore: number,
      /** The timeout given to the SDK. */
      readonly timeoutMs: number,
    ) {
      super();
    }
    // The settle handlers, as getters: a pass uses one pair of them (a closure each), never both.
    /** Leaves the session and checks the answer (the promise the run gets, with a check). */
    get answered(): (answer: unknown) => CallToolResult {
      return (answer) => {
        if (this.entry !== undefined) session.leave(this.entry);
        try {
          return wire.checkResult(this.name, answer);
        } catch (error) {
          return failedPass(this, error);
        }
      };
    }
    /** Notes a failure and rethrows it (with `answered`). */
    get failed(): (error: unknown) => never {
      return (error) => failedPass(this, error);
    }
    /** Leaves the session (beside the run's own reaction, without a check). */
    get left(): () => void {
      return () => {
        if (this.entry !== undefined) session.leave(this.entry);
      };
    }
    /** Notes a failure, for `toFailure` (beside the run's own reaction, without a check). */
    get noted(): (error: unknown) => void {
      return (error) => notePassFailure(this, error);
    }
    /** What `toFailure` reads of this pass. */
    facts(): CallSiteFacts {
      const facts: MutableFacts = { timeoutMs: this.timeoutMs };
      if (this.gone) return facts;
      if (this.connectionClosed) facts.connectionClosed = true;
      if (this.aborted) {
        // The run's deadline aborts with a TimeoutError; anything else that aborts it is an abort.
        const reason: unknown = this.reason;
        if (reason instanceof Error && reason.name === "TimeoutError") facts.timedOut = true;
        else facts.aborted = true;
      }
      return facts;
    }
  }

  /**
   * One attempt with a reconnect hook: reconnects first when a reconnect is due, and once more
   * after a first pass the server refused for a gone session (nothing was sent: whatever the
   * effect). Only a reconnect reads ctx.signal (an AbortSignal, made on first read).
   */
  const reconnecting = async (
    call: CallState,
    ctx: AttemptContext,
    limit: number,
  ): Promise<CallToolResult> => {
    for (let attempt = 1; ; attempt++) {
      // Nothing is sent while the reconnect runs: an attempt cut meanwhile left nothing. The
      // second pass goes through it too, even on a session a parallel call already renewed, so
      // that a run a stop ended meanwhile sends nothing more (`beforeSending`).
      if (attempt > 1 || !session.ready()) {
        call.pass = undefined;
        await ctx.beforeSending(session.ensure(ctx.signal));
      }
      try {
        return await pass(call, ctx, limit);
      } catch (error) {
        if (attempt === 1 && isSessionGone(error) && !ctx.signal.aborted) continue;
        throw error;
      }
    }
  };

  const governedCall = async (
    run: Run,
    params: GovernedCallParams,
  ): Promise<CallOutcome<CallToolResult>> => {
    const callLimit = timeoutOption(`callTool(${params.name}): timeoutMs`, params.timeoutMs);
    const call: CallState = { params, pass: undefined, deadlineAt: Number.POSITIVE_INFINITY };
    const request: MutableToolCall = {
      tool: params.name,
      toFailure: (thrown) => mapSdkError(thrown, factsOf(call.pass)),
    };
    if (server !== undefined) request.server = server;
    if (params.arguments !== undefined) request.args = params.arguments;
    if (params.callId !== undefined) request.callId = params.callId;
    if (params.signal !== undefined) request.signal = params.signal;
    if (params.beforeAnswer !== undefined) request.beforeAnswer = params.beforeAnswer;
    const annotated = annotations.get(params.name);
    if (annotated !== undefined) request.annotations = annotated;
    const inputSchema = definitions.get(params.name)?.inputSchema;
    if (inputSchema !== undefined) request.inputSchema = inputSchema;
    const outcome = await run.call<CallToolResult>(request, (ctx) => {
      // Observe-only enforces no deadline: the run's time left (negative once it passed) must
      // not cut the attempt the host would have made without Governor.
      const left = governor.policy.observeOnly ? Number.POSITIVE_INFINITY : ctx.remainingMs;
      call.deadlineAt = Date.now() + left;
      const limit = Math.max(1, Math.min(callLimit ?? maxTimeout, left));
      return options.reconnect ? reconnecting(call, ctx, limit) : pass(call, ctx, limit);
    });
    if (outcome.kind === "ok") {
      const ok = outcome.replayed ? asToolResult(outcome, params.name) : outcome;
      // A success nested too deep for the host to write down (deliverable.ts).
      const value = deliverableResult(ok.value, params.name);
      return value === ok.value ? ok : { ...ok, value };
    }
    if (outcome.kind !== "model" || outcome.reason !== "unknown_tool") return outcome;
    // Bounded by the run too: its deadline, its end and its signal.
    const timeoutMs = Math.min(maxTimeout, call.deadlineAt - Date.now());
    if (timeoutMs <= 0 || run.ended) return outcome;
    const tools = await readTools(timeoutMs, [params.signal, run.signal], () => run.ended).catch(
      () => undefined,
    );
    return tools ? withToolNames(outcome, tools, redactName) : outcome;
  };

  const callTool = (run: Run, params: GovernedCallParams): Promise<CallOutcome<CallToolResult>> => {
    // Trusted annotations need the tool list: fetch it once if the host has not.
    if (!listed && !lazyListTried && governor.toolPolicy(params.name, server).trustAnnotations) {
      lazyListTried = true;
      // Bounded by the run (its end, signal and deadline) as the call itself is.
      return readTools(maxTimeout, [params.signal, run.signal]).then(
        () => governedCall(run, params),
        () => governedCall(run, params),
      );
    }
    return governedCall(run, params);
  };

  const keepAnswer = (
    run: Run,
    params: GovernedCallParams,
    result: CallToolResult,
    ttlMs?: number,
  ): Promise<boolean> => {
    // The write as `governedCall` names it to the run: its tool, server, arguments, annotations.
    const request: MutableToolCall = { tool: params.name };
    if (server !== undefined) request.server = server;
    if (params.arguments !== undefined) request.args = params.arguments;
    const annotated = annotations.get(params.name);
    if (annotated !== undefined) request.annotations = annotated;
    return run.keepAnswer(request, result, ttlMs);
  };

  return { client, callTool, keepAnswer, listTools };
}

/** Node fires a longer timer after 1 ms: a longer limit is taken as this. */
const MAX_TIMER_MS = 2_147_483_647;

function invalidOption(text: string): GovernorError {
  return new GovernorError("invalid_options", `governClient: ${text}.`);
}

/**
 * A limit in ms as given (at most {@link MAX_TIMER_MS}); undefined when not given. Anything but a
 * positive number is refused: NaN, 0 or a negative limit timed every attempt out at once.
 */
function timeoutOption(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !(value > 0)) {
    throw invalidOption(`${field} must be a positive number of ms, got ${String(value)}`);
  }
  return Math.min(value, MAX_TIMER_MS);
}

/**
 * A replay as a tool result: the recorded one when the ledger kept a result of that shape; else
 * (`idempotency.replay: false`, a result the store let go, a key a host settled by hand with
 * something else) a fixed text saying the call was done before, so neither the host nor the
 * model is handed `undefined` or a value that is not a `CallToolResult`.
 */
function asToolResult(outcome: OkOutcome, tool: string): OkOutcome {
  const value: unknown = outcome.value;
  if (
    typeof value === "object" &&
    value !== null &&
    Array.isArray((value as { content?: unknown }).content)
  ) {
    return outcome;
  }
  return { ...outcome, value: { content: [{ type: "text", text: replayedText(tool) }] } };
}

type OkOutcome = Extract<CallOutcome<CallToolResult>, { kind: "ok" }>;

/** The call `run.call` gets, built field by field (no spread objects per call). */
type MutableToolCall = { -readonly [K in keyof ToolCall]: ToolCall[K] };

/** One governed call as its attempts share it. */
interface CallState {
  readonly params: GovernedCallParams;
  /** The last pass on the wire (none before the first, or while reconnecting), for `toFailure`. */
  pass: { facts(): CallSiteFacts; readonly retryAfterMs: number | undefined } | undefined;
  /** The run's deadline as the last attempt saw it (bounds the listing after an unknown tool). */
  deadlineAt: number;
}

/** What `toFailure` knows of a call: its last pass's facts and the `Retry-After` it captured. */
function factsOf(pass: CallState["pass"]): CallSiteFacts {
  if (pass === undefined) return {};
  const facts: MutableFacts = pass.facts();
  facts.retryAfterMs = pass.retryAfterMs;
  return facts;
}

/** The `_meta` of one attempt: the caller's, then Governor's; none when both are empty. */
function requestMeta(
  caller: Readonly<Record<string, unknown>> | undefined,
  governed: Readonly<Record<string, unknown>>,
  sdkProgress: boolean,
): Record<string, unknown> | undefined {
  let meta: Record<string, unknown> | undefined;
  if (caller !== undefined) {
    for (const key in caller) {
      if (!Object.hasOwn(caller, key) || (sdkProgress && key === "progressToken")) continue;
      meta ??= {};
      meta[key] = caller[key];
    }
  }
  for (const key in governed) {
    if (!Object.hasOwn(governed, key)) continue;
    meta ??= {};
    meta[key] = governed[key];
  }
  return meta;
}

/** Appends the tools that exist to an unknown-tool text, so the model can pick one. */
function withToolNames(
  outcome: Extract<CallOutcome<CallToolResult>, { kind: "model" }>,
  tools: readonly Tool[],
  redactName: (name: string) => string,
): CallOutcome<CallToolResult> {
  if (tools.length === 0) return outcome;
  // Names come from the server: capped and redacted like any other model-facing text.
  const names = tools.slice(0, MAX_LISTED_TOOLS).map((t) => redactName(String(t.name)));
  const more = tools.length > MAX_LISTED_TOOLS ? ", …" : "";
  const [block] = outcome.result.content;
  const text = `${block.text} Tools that exist: ${names.join(", ")}${more}.`;
  return { ...outcome, result: { ...outcome.result, content: [{ type: "text", text }] } };
}
