import { type CallOutcome, GovernorError, type Run } from "@governor/core";
import { ToolMessage } from "@langchain/core/messages";
import type { ToolSchemaBase } from "@langchain/core/tools";
import {
  checkGovernOptions,
  GovernedTool,
  type GovernOptions,
  type Perform,
  ToolThrew,
} from "./governed-tool.ts";

/** The parts of an MCP `Tool` listing that a LangChain tool needs. */
export interface McpToolListing {
  readonly name: string;
  readonly description?: string | undefined;
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** The parts of an MCP `CallToolResult` turned into a `ToolMessage`. */
export interface McpToolResult {
  readonly content?: readonly { readonly type: string; readonly text?: unknown }[] | undefined;
  readonly structuredContent?: unknown;
}

/**
 * What {@link governMcpTools} needs of `@governor/mcp`'s `governClient(client, …)`: it lists the
 * server's tools (without denied ones and open breakers) and calls them through a run.
 */
export interface GovernedMcpClient {
  listTools(options?: { readonly signal?: AbortSignal }): Promise<readonly McpToolListing[]>;
  callTool(
    run: Run,
    params: {
      readonly name: string;
      readonly arguments?: Record<string, unknown>;
      readonly callId?: string;
      readonly signal?: AbortSignal;
    },
  ): Promise<CallOutcome<McpToolResult>>;
}

/** Options of {@link governMcpTools}. */
export interface GovernMcpToolsOptions extends GovernOptions {
  /** The tools to offer; @default the governed client's `listTools()` */
  readonly tools?: readonly McpToolListing[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A successful MCP result as ToolMessage content: its text, else its structured content. */
function resultContent(result: McpToolResult): string {
  const blocks = result.content ?? [];
  if (blocks.length > 0 && blocks.every((b) => b.type === "text" && typeof b.text === "string")) {
    return blocks.map((b) => b.text as string).join("\n");
  }
  if (blocks.length === 0 && result.structuredContent !== undefined) {
    return JSON.stringify(result.structuredContent);
  }
  return JSON.stringify(blocks);
}

/**
 * `run` with each attempt's thrown error noted in `threw`: observe-only hands it back from
 * `run.call` as it is, and only this tells it from trouble in Governor (the attempts run inside
 * the governed client).
 */
function watched(run: Run, threw: { error?: unknown }): Run {
  return {
    get id() {
      return run.id;
    },
    get ended() {
      return run.ended;
    },
    get signal() {
      return run.signal;
    },
    call: (call, execute) =>
      run.call(call, async (ctx) => {
        try {
          return await execute(ctx);
        } catch (error) {
          threw.error = error;
          throw error;
        }
      }),
    keepAnswer: (call, answer, ttlMs) => run.keepAnswer(call, answer, ttlMs),
    end: () => run.end(),
    summary: () => run.summary(),
  };
}

/**
 * LangChain tools for the tools of an MCP server, called through `@governor/mcp`'s governed
 * client: the MCP adapter maps the SDK's errors (JSON-RPC errors and broken sessions go to the
 * host, never the model), sends the idempotency key in `_meta`, reconnects, and these tools turn
 * its outcome into a `ToolMessage` (Governor's text, `status: "error"`, for a correction, a switch
 * or a stop). The server checks the input against its own schema; a refusal is judged like any
 * failure. Tool calls' ids are the calls' `callId`s.
 * @example
 * const notes = governClient(client, { governor, server: "notes" });
 * const run = governor.startRun();
 * const tools = await governMcpTools(notes, { run });
 * const agent = createAgent({ model, tools, middleware: [governorMiddleware(run)] });
 */
export async function governMcpTools(
  client: GovernedMcpClient,
  options: GovernMcpToolsOptions,
): Promise<GovernedTool[]> {
  checkGovernOptions("governMcpTools", options);
  if (typeof client?.callTool !== "function" || typeof client.listTools !== "function") {
    throw new GovernorError(
      "invalid_options",
      "governMcpTools: client must be @governor/mcp's governClient(client, …) (listTools, callTool).",
    );
  }
  const listings = options.tools ?? (await client.listTools());
  return listings.map((listing) => {
    const perform: Perform = async ({ args, toolCall, config }) => {
      const threw: { error?: unknown } = {};
      const outcome = await client
        .callTool(watched(options.run, threw), {
          name: listing.name,
          arguments: isRecord(args) ? args : {},
          ...(toolCall?.id !== undefined && { callId: toolCall.id }),
          ...(config.signal !== undefined && { signal: config.signal }),
        })
        .catch((err: unknown) => {
          // Observe-only: the client's own error reaches the graph untouched. Enforcing, the
          // governed client never rejects with it.
          throw "error" in threw && err === threw.error ? new ToolThrew(err) : err;
        });
      if (outcome.kind !== "ok") return outcome;
      const content = resultContent(outcome.value);
      const value =
        toolCall?.id === undefined
          ? content
          : new ToolMessage({
              status: "success",
              content,
              artifact: outcome.value,
              name: listing.name,
              tool_call_id: toolCall.id,
            });
      return { ...outcome, value };
    };
    return new GovernedTool(
      {
        name: listing.name,
        description: listing.description ?? "",
        schema: listing.inputSchema as ToolSchemaBase,
      },
      perform,
      options,
    );
  });
}
