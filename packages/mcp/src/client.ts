import {
  type CallOutcome,
  type Governor,
  HostError,
  type Run,
  type ToolAnnotations,
} from "@governor/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type CallToolResult, CallToolResultSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { mapSdkError, OutputSchemaError } from "./map-error.ts";
import type { RetryAfterFetch } from "./retry-after.ts";

/** Options of {@link governClient}. */
export interface GovernClientOptions {
  readonly governor: Governor;
  /** The server's name in the policy (`servers.<name>`). */
  readonly server?: string;
  /** Upper bound of one attempt's SDK timeout; the run's remaining time lowers it. @default 60000 */
  readonly requestTimeoutMs?: number;
  /** Re-establishes the session (new transport + `client.connect`) after a close or expiry. */
  readonly reconnect?: () => Promise<void>;
  /** Captures HTTP `Retry-After` headers (see `captureRetryAfter`). */
  readonly retryAfter?: RetryAfterFetch;
  /** Receives transport trouble outside any call (the client's `onerror`: junk on stdout, SSE drops). */
  readonly onTransportError?: (error: HostError) => void;
}

/** One tool call as the model asked for it. */
export interface GovernedCallParams {
  readonly name: string;
  readonly arguments?: Record<string, unknown>;
  /** The host's tool-call id (identifies the logical call for idempotency). */
  readonly callId?: string;
}

/** An MCP client whose tool calls go through Governor runs. */
export interface GovernedClient {
  readonly client: Client;
  /** Calls a tool through the run. See `CallOutcome`; {@link toModelResult} gives what the model reads. */
  callTool(run: Run, params: GovernedCallParams): Promise<CallOutcome<CallToolResult>>;
  /** Lists tools, hiding those whose breaker is open and those the policy denies. */
  listTools(): Promise<Tool[]>;
}

/** What to hand the model for an outcome: the tool's result, or Governor's `isError` text. */
export function toModelResult(outcome: CallOutcome<CallToolResult>): CallToolResult {
  if (outcome.kind === "ok") return outcome.value;
  return { content: [...outcome.result.content], isError: true };
}

interface OutputValidatorAccess {
  getToolOutputValidator?: (name: string) => ((value: unknown) => { valid: boolean; errorMessage?: string }) | undefined;
}

/**
 * Wraps an `@modelcontextprotocol/sdk` client so that tool calls go through a Governor run.
 * Each attempt gets a fresh AbortController linked to the run (SDK 1.32 never removes the abort
 * listener it adds), a timeout from the run's remaining time, and the idempotency key in `_meta`.
 */
export function governClient(client: Client, options: GovernClientOptions): GovernedClient {
  const { governor, server } = options;
  const maxTimeout = options.requestTimeoutMs ?? 60_000;
  const annotations = new Map<string, ToolAnnotations>();
  let closed = false;

  const previousClose = client.onclose;
  client.onclose = () => {
    closed = true;
    previousClose?.();
  };
  const previousError = client.onerror;
  client.onerror = (error: Error) => {
    previousError?.(error);
    options.onTransportError?.(
      new HostError({
        tool: "",
        server,
        reason: "transport_error",
        channel: "local",
        message: error.message,
        cause: error,
      }),
    );
  };

  const listTools = async (): Promise<Tool[]> => {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    annotations.clear();
    for (const tool of tools) if (tool.annotations) annotations.set(tool.name, tool.annotations);
    const unavailable = new Set(await governor.unavailableTools(tools.map((t) => t.name), server));
    return tools.filter(
      (t) => !unavailable.has(t.name) && governor.toolPolicy(t.name, server).access !== "deny",
    );
  };

  const callTool = async (run: Run, params: GovernedCallParams): Promise<CallOutcome<CallToolResult>> => {
    let timeoutMs = maxTimeout;
    const annotated = annotations.get(params.name);
    const outcome = await run.call<CallToolResult>(
      {
        tool: params.name,
        ...(server !== undefined && { server }),
        ...(params.arguments !== undefined && { args: params.arguments }),
        ...(params.callId !== undefined && { callId: params.callId }),
        ...(annotated !== undefined && { annotations: annotated }),
        toFailure: (thrown) =>
          mapSdkError(thrown, {
            connectionClosed: closed,
            timeoutMs,
            retryAfterMs: options.retryAfter?.take(),
          }),
      },
      async (ctx) => {
        if (closed && options.reconnect && ctx.attempt > 1) {
          await options.reconnect();
          closed = false;
        }
        timeoutMs = Math.max(1, Math.min(maxTimeout, ctx.remainingMs));
        // Calls tools/call directly: Client.callTool throws an isError result away when its
        // structuredContent fails the output schema (typescript-sdk #1943).
        const result = (await client.request(
          { method: "tools/call", params: { name: params.name, arguments: { ...ctx.args }, _meta: { ...ctx.meta } } },
          CallToolResultSchema,
          { signal: ctx.signal, timeout: timeoutMs },
        )) as CallToolResult;
        if (!result.isError) validateOutput(client, params.name, result);
        return result;
      },
    );
    if (outcome.kind === "model" && outcome.reason === "unknown_tool") {
      await listTools().catch(() => undefined);
    }
    return outcome;
  };

  return { client, callTool, listTools };
}

/** The SDK's own output-schema check, for successful results only. */
function validateOutput(client: Client, name: string, result: CallToolResult): void {
  const validator = (client as unknown as OutputValidatorAccess).getToolOutputValidator?.(name);
  if (!validator) return;
  if (result.structuredContent === undefined) {
    throw new OutputSchemaError(`Tool ${name} has an output schema but returned no structured content`);
  }
  const verdict = validator(result.structuredContent);
  if (!verdict.valid) {
    throw new OutputSchemaError(
      `Structured content of ${name} does not match its output schema: ${verdict.errorMessage ?? ""}`,
    );
  }
}
