/**
 * The two MCP TypeScript SDK generations the adapter governs, behind one small surface:
 * `@modelcontextprotocol/sdk` 1.32 (`Client` from `@modelcontextprotocol/sdk/client/index.js`)
 * and `@modelcontextprotocol/client` 2.x (`Client` from `@modelcontextprotocol/client`). Neither
 * is imported here at load time: a host that installed only one of them can use the adapter.
 */
import type { CallToolResult, Progress, Tool } from "@modelcontextprotocol/sdk/types.js";
import { LocalCheckError } from "./map-error.ts";

/**
 * What the adapter needs of a client, met by both SDKs' `Client` classes: its transport (to tell
 * one connection from the next), the `onclose`/`onerror` hooks it chains, and `close`.
 */
export interface McpClient {
  readonly transport: object | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  close(): Promise<void>;
}

/** Which SDK a client comes from. */
export type SdkGeneration = "v1" | "v2";

/** One attempt's bounds, given to the SDK. */
export interface WireOptions {
  readonly signal: AbortSignal;
  readonly timeout: number;
}

/** One `tools/call`'s options: its bounds, and the caller's progress handler. */
export interface CallOptions extends WireOptions {
  readonly onprogress?: (progress: Progress) => void;
}

/** One page of `tools/list`. */
export interface ToolPage {
  readonly tools: Tool[];
  readonly nextCursor?: string | undefined;
}

/** The params of one `tools/call`. */
export interface WireParams {
  name: string;
  arguments: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/** The requests the adapter sends, each the way its SDK wants them sent. */
export interface ToolWire {
  readonly generation: SdkGeneration;
  /**
   * One `tools/call` on the wire: the SDK's answer, checked against the result schema. The rest
   * of the SDK's checks of a successful result (the output schema), but none of an `isError` one
   * (typescript-sdk #1943), are made by 2.x here and by {@link ToolWire.checkResult} for 1.32: the
   * answer goes through one reaction, not an async function's frames as well.
   * `definition`: the tool as the adapter last listed it (v2 validates its output against it).
   */
  callTool(
    params: WireParams,
    options: CallOptions,
    definition: Tool | undefined,
  ): Promise<unknown>;
  /**
   * Whether an answer of tool `name` needs {@link ToolWire.checkResult}: 1.32 with an output schema
   * for the tool (as last listed). Read when the call is sent.
   */
  checks(name: string): boolean;
  /**
   * What `callTool` answered, once checked as the SDK's own `Client.callTool` would (1.32: the
   * output schema of a successful result); throws a {@link LocalCheckError} when it fails.
   */
  checkResult(name: string, answer: unknown): CallToolResult;
  /** One page of `tools/list`, never the SDK's own walk over all pages. */
  listPage(cursor: string | undefined, options: WireOptions): Promise<ToolPage>;
}

/** A 2.x `Client` has `getProtocolEra` (the 2025 vs 2026-07-28 wire era); 1.32's has not. */
export function sdkGeneration(client: McpClient): SdkGeneration {
  return typeof (client as { getProtocolEra?: unknown }).getProtocolEra === "function"
    ? "v2"
    : "v1";
}

/** The request methods of both clients, as the adapter calls them. */
interface RequestingClient {
  request(request: object, schemaOrOptions?: unknown, options?: unknown): Promise<unknown>;
  listTools(params: object | undefined, options: object): Promise<unknown>;
  callTool(params: object, options: object): Promise<unknown>;
}

/** The parts of a 1.32 `Client` that are private in its types but that `Client.callTool` relies on. */
interface V1Internals {
  getToolOutputValidator?: (
    name: string,
  ) => ((value: unknown) => { valid: boolean; errorMessage?: string }) | undefined;
  isToolTaskRequired?: (name: string) => boolean;
}

type V1Types = typeof import("@modelcontextprotocol/sdk/types.js");
let v1Types: Promise<V1Types> | undefined;

/** The wire of `client`, for the SDK it comes from. */
export function toolWire(client: McpClient): ToolWire {
  const requesting = client as unknown as RequestingClient;
  if (sdkGeneration(client) === "v2") {
    return {
      generation: "v2",
      // Client.callTool of 2.x keeps isError results whatever their structuredContent, checks a
      // success against the output schema, and mirrors Mcp-Param headers on 2026-07-28 HTTP.
      callTool: (params, options, definition) =>
        requesting.callTool(params, {
          ...options,
          ...(definition !== undefined && { toolDefinition: definition }),
        }),
      checks: () => false,
      checkResult: (_name, answer) => answer as CallToolResult,
      // request(), not listTools(): without a cursor, 2.x's listTools walks every page itself.
      listPage: (cursor, options) =>
        requesting.request(
          { method: "tools/list", ...(cursor !== undefined && { params: { cursor } }) },
          { signal: options.signal, timeout: options.timeout },
        ) as Promise<ToolPage>,
    };
  }
  const internals = client as unknown as V1Internals;
  // Only a 1.32 client's host has the 1.32 SDK installed: its result schema is loaded on first use,
  // and kept, so later calls go out without waiting for a module.
  let resultSchema: V1Types["CallToolResultSchema"] | undefined;
  // tools/call directly, not Client.callTool: it throws an isError result away when its
  // structuredContent fails the output schema (typescript-sdk #1943). The output schema is
  // checked by checkResult, for successful results only.
  const request = (
    params: WireParams,
    options: CallOptions,
    schema: V1Types["CallToolResultSchema"],
  ) => requesting.request({ method: "tools/call", params }, schema, options);
  return {
    generation: "v1",
    callTool: (params, options) => {
      if (internals.isToolTaskRequired?.(params.name)) {
        return Promise.reject(
          new LocalCheckError(
            "thrown",
            `Tool ${params.name} requires task-based execution, which the adapter does not support`,
          ),
        );
      }
      if (resultSchema !== undefined) return request(params, options, resultSchema);
      v1Types ??= import("@modelcontextprotocol/sdk/types.js");
      return v1Types.then(({ CallToolResultSchema }) => {
        resultSchema = CallToolResultSchema;
        return request(params, options, CallToolResultSchema);
      });
    },
    checks: (name) => internals.getToolOutputValidator?.(name) !== undefined,
    checkResult: (name, answer) => {
      const result = answer as CallToolResult;
      if (!result.isError) validateV1Output(internals, name, result);
      return result;
    },
    listPage: (cursor, options) =>
      requesting.listTools(
        cursor === undefined ? undefined : { cursor },
        options,
      ) as Promise<ToolPage>,
  };
}

/** 1.32's own output-schema check (what `Client.callTool` does), for successful results only. */
function validateV1Output(internals: V1Internals, name: string, result: CallToolResult): void {
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
