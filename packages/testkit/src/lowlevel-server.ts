import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { crashMessage, DEFAULT_SECRET } from "./secrets.ts";
import { installResponseDelay, installResponseMangler } from "./wire.ts";

/** Tool names of {@link createLowLevelServer}. */
export const LOWLEVEL_TOOL_NAMES = [
  "echo",
  "internal",
  "bad_result",
  "peer_error",
  "throw_mcp_error",
  "typed_missing",
  "typed_wrong",
  "late_answer",
] as const;

export interface LowLevelServerOptions {
  /** Embedded in the `data.detail` of the `internal` error; defaults to a fake `sk-live-…` key. */
  secret?: string;
  /** Server name reported at initialization. */
  name?: string;
  /**
   * `tools/list` never ends: every page carries a `nextCursor`, a new one each time (`"fresh"`)
   * or always the same (`"same"`). For the client's pagination bounds.
   */
  endlessToolPages?: "fresh" | "same";
  /** Each `tools/list` page reaches the wire this many ms late. */
  toolPageDelayMs?: number;
}

/**
 * A JSON-RPC error as a spec-style server sends it: `code`, the plain `message`, optional `data`.
 * (Throwing the SDK's `McpError` instead sends its already-prefixed message: see `throw_mcp_error`.)
 */
function rpcError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, ...(data !== undefined ? { data } : {}) });
}

const TYPED_OUTPUT = {
  type: "object" as const,
  properties: { value: { type: "string" } },
  required: ["value"],
};

const TOOLS: Tool[] = [
  {
    name: "echo",
    description: "Answers its `text` argument. A non-string `text` is a JSON-RPC -32602.",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    annotations: { readOnlyHint: true },
  },
  {
    name: "internal",
    description: "Always fails with JSON-RPC -32603 (data.detail holds secrets).",
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
  },
  {
    name: "bad_result",
    description:
      'Answers a result that fails the CallToolResult schema: {"content": "not an array"}.',
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
  },
  {
    name: "peer_error",
    description: "Fails with the JSON-RPC error given: {code, message, data?}.",
    inputSchema: {
      type: "object",
      properties: { code: { type: "integer" }, message: { type: "string" }, data: {} },
      required: ["code", "message"],
    },
  },
  {
    name: "throw_mcp_error",
    description:
      "The handler throws the SDK's McpError(code, message) (its message is prefixed twice on the client).",
    inputSchema: {
      type: "object",
      properties: { code: { type: "integer" }, message: { type: "string" } },
      required: ["code", "message"],
    },
  },
  {
    name: "typed_missing",
    description: "Declares an output schema, then answers without structuredContent.",
    inputSchema: { type: "object", properties: {} },
    outputSchema: TYPED_OUTPUT,
    annotations: { readOnlyHint: true },
  },
  {
    name: "typed_wrong",
    description: "Declares an output schema, then answers structuredContent that breaks it.",
    inputSchema: { type: "object", properties: {} },
    outputSchema: TYPED_OUTPUT,
    annotations: { readOnlyHint: true },
  },
  {
    name: "late_answer",
    description:
      "Answers at once, but the answer reaches the wire `ms` milliseconds late (after the client's timeout); the answer carries the server's secret.",
    inputSchema: { type: "object", properties: { ms: { type: "integer" } }, required: ["ms"] },
    annotations: { readOnlyHint: true },
  },
];

/**
 * A low-level SDK `Server` that fails the spec way, with JSON-RPC errors instead of `isError`
 * results: unknown tool → -32602 `Unknown tool: X`; bad arguments → -32602; `internal` → -32603;
 * `bad_result` → a result the client's schema rejects (ZodError on the client); `typed_missing` /
 * `typed_wrong` break their own output schema (the client's local -32600 / -32602 checks).
 */
export function createLowLevelServer(options: LowLevelServerOptions = {}): Server {
  const secret = options.secret ?? DEFAULT_SECRET;
  const server = new Server(
    { name: options.name ?? "governor-lowlevel-server", version: "0.1.0" },
    { capabilities: { tools: {} } },
  );
  const malformed = installResponseMangler(server);
  const delayed = installResponseDelay(server);

  let page = 0;
  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => {
    if (options.toolPageDelayMs !== undefined)
      delayed.set(extra.requestId, options.toolPageDelayMs);
    if (options.endlessToolPages === undefined) return { tools: TOOLS };
    page++;
    const nextCursor = options.endlessToolPages === "same" ? "again" : `page-${page}`;
    return { tools: [{ ...(TOOLS[0] as Tool), name: `echo_${page}` }], nextCursor };
  });
  server.setRequestHandler(CallToolRequestSchema, (request, extra): CallToolResult => {
    const { name } = request.params;
    const args: Record<string, unknown> = request.params.arguments ?? {};
    switch (name) {
      case "echo":
        if (typeof args.text !== "string") {
          throw rpcError(
            ErrorCode.InvalidParams,
            'Invalid arguments for tool echo: "text" must be a string',
          );
        }
        return { content: [{ type: "text", text: args.text }] };
      case "internal":
        throw rpcError(
          ErrorCode.InternalError,
          "Internal error: lost the connection to the notes database",
          { detail: crashMessage(secret) },
        );
      case "bad_result":
        malformed.add(extra.requestId);
        return { content: [{ type: "text", text: "this result is replaced on the wire" }] };
      case "peer_error": {
        if (typeof args.code !== "number" || typeof args.message !== "string") {
          throw rpcError(ErrorCode.InvalidParams, "Invalid arguments for tool peer_error");
        }
        throw rpcError(args.code, args.message, args.data);
      }
      case "throw_mcp_error": {
        if (typeof args.code !== "number" || typeof args.message !== "string") {
          throw rpcError(ErrorCode.InvalidParams, "Invalid arguments for tool throw_mcp_error");
        }
        throw new McpError(args.code, args.message);
      }
      case "late_answer": {
        if (typeof args.ms !== "number") {
          throw rpcError(ErrorCode.InvalidParams, "Invalid arguments for tool late_answer");
        }
        delayed.set(extra.requestId, args.ms);
        return { content: [{ type: "text", text: `Report ready. ${crashMessage(secret)}` }] };
      }
      case "typed_missing":
        return { content: [{ type: "text", text: "no structured content" }] };
      case "typed_wrong":
        return {
          content: [{ type: "text", text: "wrong structured content" }],
          structuredContent: { value: 3 },
        };
      default:
        throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
  });
  return server;
}
