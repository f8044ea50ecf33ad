import { type Failure, localFailure } from "@governor/core";
import { mapSdkError } from "@governor/mcp";

/** What the Agents SDK throws when `callTool` runs before `connect()`. */
const NOT_INITIALIZED = /^Server not initialized\b/;

/**
 * Maps what an Agents SDK MCP server's `callTool` threw to a failure. The Agents SDK's MCP servers
 * use `@modelcontextprotocol/client` 2.x, whose errors `@governor/mcp`'s `mapSdkError` reads (a
 * `ProtocolError` is the peer's, except the client's own output-schema checks; an `SdkError` is
 * local, a caller's abort apart from the SDK's timeout); the Agents SDK adds one error of its own.
 */
export function mapMcpError(thrown: unknown): Failure {
  const message =
    typeof thrown === "object" && thrown !== null
      ? (thrown as { message?: unknown }).message
      : undefined;
  if (typeof message === "string" && NOT_INITIALIZED.test(message)) {
    return localFailure("not_connected", "The MCP server is not connected");
  }
  return mapSdkError(thrown);
}
