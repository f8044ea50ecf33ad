import {
  type AttemptContext,
  type CallOutcome,
  type Governor,
  HostError,
  type Run,
  type ToolAnnotations,
} from "@governor/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  type CallToolResult,
  CallToolResultSchema,
  ErrorCode,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { type CallSiteFacts, isSessionGone, LocalCheckError, mapSdkError } from "./map-error.ts";
import type { RetryAfterFetch } from "./retry-after.ts";

/** Options of {@link governClient}. */
export interface GovernClientOptions {
  readonly governor: Governor;
  /** The server's name in the policy (`servers.<name>`): its settings and `trustAnnotations` apply. */
  readonly server?: string;
  /** Upper bound of one attempt's timeout; the run's remaining time lowers it. @default 60000 */
  readonly requestTimeoutMs?: number;
  /**
   * Connects the client to a new transport (`client.connect(new StdioClientTransport(…))`) after
   * the connection closed or an HTTP session expired. The adapter closes the old transport first
   * and calls this before the next attempt. Only the calls the run may repeat are attempted again:
   * read-only, idempotent, keyed, or never sent.
   */
  readonly reconnect?: () => Promise<void>;
  /** Captures HTTP `Retry-After` headers (see `captureRetryAfter`). */
  readonly retryAfter?: RetryAfterFetch;
  /**
   * Transport trouble no call reports: the client's `onerror` (a non-JSON line on stdout, an SSE
   * stream dropped) and a connection that closes while calls are in flight. Never shown to the model.
   */
  readonly onTransportError?: (error: HostError) => void;
}

/** One tool call as the model asked for it. */
export interface GovernedCallParams {
  readonly name: string;
  readonly arguments?: Record<string, unknown>;
  /** The host's tool-call id (identifies the logical call for idempotency). */
  readonly callId?: string;
  /** Upper bound of each attempt's timeout for this call. @default options.requestTimeoutMs */
  readonly timeoutMs?: number;
}

/** An MCP client whose tool calls go through Governor runs. */
export interface GovernedClient {
  readonly client: Client;
  /**
   * Calls a tool through the run; always resolves with an outcome (a failure only the host can
   * handle goes to `onHostError`, or is thrown as `HostError` without that hook). Hand
   * {@link toModelResult} of it to the model.
   */
  callTool(run: Run, params: GovernedCallParams): Promise<CallOutcome<CallToolResult>>;
  /** Lists tools, hiding those whose breaker is open and those the policy denies. */
  listTools(): Promise<Tool[]>;
}

/** What to hand the model for an outcome: the tool's result, or Governor's `isError` text. */
export function toModelResult(outcome: CallOutcome<CallToolResult>): CallToolResult {
  if (outcome.kind === "ok") return outcome.value;
  return { content: [...outcome.result.content], isError: true };
}

/** The parts of `Client` that are private in its types but that `Client.callTool` relies on. */
interface ClientInternals {
  getToolOutputValidator?: (
    name: string,
  ) => ((value: unknown) => { valid: boolean; errorMessage?: string }) | undefined;
  isToolTaskRequired?: (name: string) => boolean;
}

type MutableFacts = { -readonly [K in keyof CallSiteFacts]: CallSiteFacts[K] };

/** How many tool names a `switch_tool` text lists. */
const MAX_LISTED_TOOLS = 30;

/**
 * Wraps an `@modelcontextprotocol/sdk` client so that tool calls go through a Governor run.
 * Each attempt gives the SDK the run's per-attempt signal (a fresh AbortController linked to the
 * run and unlinked afterwards: SDK 1.32 never removes the abort listener it adds), a timeout from
 * the run's remaining time, and the idempotency key in `_meta`. Failures are tagged `local` or
 * `peer` where they happen, from what the adapter saw of the attempt.
 * @example
 * const governed = governClient(client, { governor, server: "notes" });
 * const outcome = await governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
 * messages.push({ role: "tool", content: toModelResult(outcome) });
 */
export function governClient(client: Client, options: GovernClientOptions): GovernedClient {
  const { governor, server } = options;
  const maxTimeout = options.requestTimeoutMs ?? 60_000;
  const internals = client as unknown as ClientInternals;
  const annotations = new Map<string, ToolAnnotations>();
  let listed = false;
  let lazyListTried = false;
  let closes = 0;
  let inFlight = 0;
  let expired = false;
  let reconnecting: Promise<void> | undefined;

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
    if (inFlight > 0) {
      options.onTransportError?.(
        transportError(
          "connection_closed",
          `Connection closed with ${inFlight} call(s) in flight`,
          undefined,
          ErrorCode.ConnectionClosed,
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
      if (unclaimed.delete(error)) {
        options.onTransportError?.(transportError("transport_error", error.message, error));
      }
    });
  };

  const listTools = async (): Promise<Tool[]> => {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? undefined : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    annotations.clear();
    for (const tool of tools) if (tool.annotations) annotations.set(tool.name, tool.annotations);
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

  /** Re-establishes the session when it is gone and the host gave a way to (one at a time). */
  const ensureSession = async (): Promise<void> => {
    const reconnect = options.reconnect;
    if (!reconnect || (client.transport !== undefined && !expired)) return;
    reconnecting ??= (async () => {
      try {
        if (client.transport !== undefined) await client.close().catch(() => undefined);
        await reconnect();
        expired = false;
      } finally {
        reconnecting = undefined;
      }
    })();
    await reconnecting;
  };

  /**
   * One request on the wire. `ctx.signal` is the run's per-attempt signal (core's AttemptContext:
   * a fresh AbortController per attempt, linked to the run's signal and unlinked after it), so
   * the listener the SDK adds to it and never removes dies with the attempt.
   */
  const send = async (
    params: GovernedCallParams,
    ctx: AttemptContext,
    limit: number,
    facts: MutableFacts,
  ): Promise<CallToolResult> => {
    const closesBefore = closes;
    const transport = client.transport;
    facts.timeoutMs = limit;
    inFlight += 1;
    try {
      if (internals.isToolTaskRequired?.(params.name)) {
        throw new LocalCheckError(
          "thrown",
          `Tool ${params.name} requires task-based execution, which the adapter does not support`,
        );
      }
      // tools/call directly, not Client.callTool: it throws an isError result away when its
      // structuredContent fails the output schema (typescript-sdk #1943). The output schema is
      // checked below, for successful results only.
      const result = (await client.request(
        {
          method: "tools/call",
          params: {
            name: params.name,
            arguments: { ...ctx.args },
            ...(Object.keys(ctx.meta).length > 0 && { _meta: { ...ctx.meta } }),
          },
        },
        CallToolResultSchema,
        { signal: ctx.signal, timeout: limit },
      )) as CallToolResult;
      if (!result.isError) validateOutput(internals, params.name, result);
      return result;
    } catch (error) {
      unclaimed.delete(error);
      // The SDK drops its transport before it rejects pending calls with -32000, so this holds
      // even when the host replaced the onclose handler.
      facts.connectionClosed = closes > closesBefore || client.transport !== transport;
      if (ctx.signal.aborted) {
        // The run's deadline aborts with a TimeoutError; anything else that aborts it is an abort.
        const reason: unknown = ctx.signal.reason;
        if (reason instanceof Error && reason.name === "TimeoutError") facts.timedOut = true;
        else facts.aborted = true;
      }
      throw error;
    } finally {
      inFlight -= 1;
    }
  };

  const callTool = async (
    run: Run,
    params: GovernedCallParams,
  ): Promise<CallOutcome<CallToolResult>> => {
    // Trusted annotations need the tool list: fetch it once if the host has not.
    if (!listed && !lazyListTried && governor.toolPolicy(params.name, server).trustAnnotations) {
      lazyListTried = true;
      await listTools().catch(() => undefined);
    }
    const annotated = annotations.get(params.name);
    let facts: CallSiteFacts = {};
    const outcome = await run.call<CallToolResult>(
      {
        tool: params.name,
        ...(server !== undefined && { server }),
        ...(params.arguments !== undefined && { args: params.arguments }),
        ...(params.callId !== undefined && { callId: params.callId }),
        ...(annotated !== undefined && { annotations: annotated }),
        toFailure: (thrown) =>
          mapSdkError(thrown, { ...facts, retryAfterMs: options.retryAfter?.take() }),
      },
      async (ctx) => {
        const limit = Math.max(1, Math.min(params.timeoutMs ?? maxTimeout, ctx.remainingMs));
        for (let pass = 1; ; pass++) {
          const current: MutableFacts = {};
          facts = current;
          await ensureSession();
          try {
            return await send(params, ctx, limit, current);
          } catch (error) {
            // Nothing was sent on a gone session: reconnect and send once more, whatever the effect.
            if (pass === 1 && options.reconnect && isSessionGone(error) && !ctx.signal.aborted) {
              expired = true;
              continue;
            }
            throw error;
          }
        }
      },
    );
    if (outcome.kind === "model" && outcome.reason === "unknown_tool") {
      const tools = await listTools().catch(() => undefined);
      if (tools) return withToolNames(outcome, tools);
    }
    return outcome;
  };

  return { client, callTool, listTools };
}

/** Appends the tools that exist to an unknown-tool text, so the model can pick one. */
function withToolNames(
  outcome: Extract<CallOutcome<CallToolResult>, { kind: "model" }>,
  tools: readonly Tool[],
): CallOutcome<CallToolResult> {
  if (tools.length === 0) return outcome;
  const names = tools.slice(0, MAX_LISTED_TOOLS).map((t) => t.name);
  const more = tools.length > MAX_LISTED_TOOLS ? ", …" : "";
  const [block] = outcome.result.content;
  const text = `${block.text} Tools that exist: ${names.join(", ")}${more}.`;
  return { ...outcome, result: { ...outcome.result, content: [{ type: "text", text }] } };
}

/** The SDK's own output-schema check (what `Client.callTool` does), for successful results only. */
function validateOutput(internals: ClientInternals, name: string, result: CallToolResult): void {
  const validator = internals.getToolOutputValidator?.(name);
  if (!validator) return;
  if (result.structuredContent == null) {
    throw new LocalCheckError(
      "malformed_result",
      `Tool ${name} has an output schema but did not return structured content`,
    );
  }
  let verdict: { valid: boolean; errorMessage?: string };
  try {
    verdict = validator(result.structuredContent);
  } catch (error) {
    verdict = {
      valid: false,
      errorMessage: error instanceof Error ? error.message : String(error),
    };
  }
  if (!verdict.valid) {
    throw new LocalCheckError(
      "malformed_result",
      `Structured content of ${name} does not match its output schema: ${verdict.errorMessage ?? ""}`,
    );
  }
}
