import { type Failure, failureFromError, type LocalKind, localFailure } from "@governor/core";

/** `SdkError` codes of `@modelcontextprotocol/client` 2.x (which the Agents SDK's MCP servers use). */
const SDK_LOCAL: Readonly<Record<string, LocalKind>> = {
  REQUEST_TIMEOUT: "timeout",
  CONNECTION_CLOSED: "connection_closed",
  NOT_CONNECTED: "not_connected",
  NOT_INITIALIZED: "not_connected",
  SEND_FAILED: "network",
  INVALID_RESULT: "malformed_result",
};

/** What the Agents SDK throws when `callTool` runs before `connect()`. */
const NOT_INITIALIZED = /^Server not initialized\b/;

function field(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/**
 * Maps what an Agents SDK MCP server's `callTool` threw to a failure, tagging its origin: a
 * `ProtocolError` (a JSON-RPC error the server sent) is `peer`; an `SdkError` (the client's own
 * timeout, closed connection, send failure, invalid result, HTTP status) and anything else the
 * client threw are `local`. Read by shape (`name`, `code`), so any copy of the MCP client works.
 */
export function mapMcpError(thrown: unknown): Failure {
  const name = field(thrown, "name");
  const code = field(thrown, "code");
  if (name === "ProtocolError" && typeof code === "number") {
    return failureFromError(thrown, { origin: "peer", jsonRpc: true });
  }
  if (
    name === "SdkHttpError" ||
    (name === "SdkError" && typeof field(field(thrown, "data"), "status") === "number")
  ) {
    return failureFromError(thrown, { local: "http_status" });
  }
  if (name === "SdkError" && typeof code === "string" && Object.hasOwn(SDK_LOCAL, code)) {
    return failureFromError(thrown, { local: SDK_LOCAL[code] as LocalKind });
  }
  const message = field(thrown, "message");
  if (typeof message === "string" && NOT_INITIALIZED.test(message)) {
    return localFailure("not_connected", "The MCP server is not connected");
  }
  return failureFromError(thrown, { origin: "local" });
}
