import { ProtocolError, SdkError, SdkErrorCode } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { mapMcpError } from "./map-mcp-error.ts";

// The Agents SDK's MCP servers use @modelcontextprotocol/client 2.x: these are the errors its
// `callTool` rejects with. The mapping is @governor/mcp's; these pin the cases a copy got wrong.
describe("mapMcpError (Agents SDK MCP servers, client 2.x errors)", () => {
  it("a caller's abort is an abort, the SDK's own timer a timeout", () => {
    // 2.x rejects an aborted request with REQUEST_TIMEOUT and no data; its timer adds data.timeout.
    const aborted = mapMcpError(
      new SdkError(SdkErrorCode.RequestTimeout, "This operation was aborted"),
    );
    expect(aborted).toMatchObject({ channel: "local", local: "aborted" });
    const timedOut = mapMcpError(
      new SdkError(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: 500 }),
    );
    expect(timedOut).toMatchObject({ channel: "local", local: "timeout" });
  });

  it("the client's own output-schema check is a malformed result, not the server's error", () => {
    const checked = mapMcpError(
      new ProtocolError(-32602, "Structured content does not match the tool's output schema: x"),
    );
    expect(checked).toMatchObject({ channel: "local", local: "malformed_result" });
  });

  it("a ProtocolError the server sent is the peer's JSON-RPC error", () => {
    expect(mapMcpError(new ProtocolError(-32603, "Internal error"))).toMatchObject({
      channel: "protocol",
      origin: "peer",
    });
  });

  it("a closed connection is local; the Agents SDK's not-initialized error is not_connected", () => {
    expect(
      mapMcpError(new SdkError(SdkErrorCode.ConnectionClosed, "Connection closed")),
    ).toMatchObject({ channel: "local", local: "connection_closed" });
    expect(
      mapMcpError(new Error("Server not initialized. Make sure you call connect() first.")),
    ).toMatchObject({ channel: "local", local: "not_connected" });
  });

  it("a thrown non-error value does not crash the mapping", () => {
    expect(mapMcpError(undefined)).toMatchObject({ channel: "local" });
    expect(mapMcpError("boom")).toMatchObject({ channel: "local" });
  });
});
