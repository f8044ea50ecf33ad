import {
  type Failure,
  failureFromError,
  type LocalKind,
  type ToolAnnotations,
} from "@governor/core";

/**
 * The marker `@ai-sdk/mcp`'s `MCPClientError` carries (1.x and 2.x alike: its `isInstance` checks
 * it). Its `name` is `MCPClientError`, which any error may be called; the package is not a
 * dependency, so the marker is read directly.
 */
const MCP_CLIENT_ERROR = Symbol.for("vercel.ai.error.AI_MCPClientError");
/** The marker of `@ai-sdk/mcp`'s `MCPClientOAuthError` and its subclasses (the client's OAuth flow). */
const MCP_OAUTH_ERROR = Symbol.for("vercel.ai.error.AI_MCPClientOAuthError");

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** The local kind of an `MCPClientError` without a JSON-RPC code or HTTP status, by its message. */
function localKind(message: string): LocalKind {
  if (message === "Connection closed") return "connection_closed";
  if (/^Request timed out\b/.test(message)) return "timeout";
  if (/closed client|Not connected/.test(message)) return "not_connected";
  return "thrown";
}

/**
 * Maps what a tool of `@ai-sdk/mcp`'s client threw, tagging its origin (docs/architecture.md §2); anything
 * else is `undefined` (the caller's default applies). The client raises one error class for
 * everything: with a numeric `code` it is the server's JSON-RPC error response (peer, protocol
 * channel: the host's, except an unknown tool); with a `statusCode` it is the HTTP layer's answer;
 * without either it is the client's own (`Connection closed`, `Request timed out…`, a closed
 * client, a transport error): local, never a tool's text for the model. Its `MCPClientOAuthError`
 * (the client's OAuth flow failed) goes to the host.
 * @example
 * mapMcpClientError(new MCPClientError({ message: "Connection closed" }));
 * // → { channel: "local", origin: "local", local: "connection_closed", … }
 */
export function mapMcpClientError(error: unknown): Failure | undefined {
  if (!isRecord(error)) return undefined;
  if ((error as { [MCP_OAUTH_ERROR]?: unknown })[MCP_OAUTH_ERROR] === true) {
    // The client's OAuth flow failed (its message may quote the authorization server's raw
    // body, a token's fate): the host's, as @governor/mcp routes an OAuthError. Not the tool's.
    return failureFromError(error, { origin: "local", local: "thrown" });
  }
  if ((error as { [MCP_CLIENT_ERROR]?: unknown })[MCP_CLIENT_ERROR] !== true) return undefined;
  if (typeof error.code === "number") return failureFromError(error, { jsonRpc: true });
  if (typeof error.statusCode === "number") {
    // The client's message quotes the HTTP response's body (`… (HTTP 403): {"error": …}`): the
    // host keeps it (raw); the model reads the status, as through @governor/mcp.
    return { ...failureFromError(error, { origin: "local" }), text: `HTTP ${error.statusCode}` };
  }
  const message = typeof error.message === "string" ? error.message : "";
  return failureFromError(error, { origin: "local", local: localKind(message) });
}

/**
 * A tool's MCP annotations as `@ai-sdk/mcp` keeps them (`tool.metadata.annotations`); Governor
 * uses them only for a server the policy trusts (`servers.<name>.trustAnnotations`).
 */
export function mcpAnnotations(tool: unknown): ToolAnnotations | undefined {
  if (!isRecord(tool) || !isRecord(tool.metadata)) return undefined;
  const a = tool.metadata.annotations;
  if (!isRecord(a)) return undefined;
  const hint = (v: unknown) => (typeof v === "boolean" ? v : undefined);
  const out: { -readonly [K in keyof ToolAnnotations]: ToolAnnotations[K] } = {};
  for (const key of ["readOnlyHint", "destructiveHint", "idempotentHint"] as const) {
    const value = hint(a[key]);
    if (value !== undefined) out[key] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
