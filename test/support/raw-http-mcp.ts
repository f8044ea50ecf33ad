/**
 * A Streamable HTTP MCP server written by hand, for the tests that need a server to write what
 * the SDK's own server never writes (a result too deep to serialize, garbage on a cancelled
 * call's stream). It keeps no session and takes POSTs only: it answers `initialize` and
 * `tools/list` (one tool) itself, a notification with `202`, and hands every other request to
 * the test.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A JSON-RPC message as the server read it. */
export interface RawRequest {
  id?: unknown;
  method: string;
  params?: { protocolVersion?: string; requestId?: unknown };
}

export interface RawHttpMcpOptions {
  /** The `serverInfo` name. */
  name: string;
  /** The one tool `tools/list` names. */
  tool: string;
  /** How every answer is written: one JSON body, or one event on an SSE stream. */
  answers: "json" | "sse";
  /**
   * A request other than `initialize` and `tools/list` (a `tools/call`). `reply` writes one
   * JSON-RPC message, given as its JSON text, as the whole answer; the test may instead hold `res`.
   */
  onRequest(message: RawRequest, res: ServerResponse, reply: (text: string) => void): void;
  /** A notification, once the server has answered it `202`. */
  onNotification?(message: RawRequest): void;
}

export interface RawHttpMcp {
  /** The endpoint, `http://127.0.0.1:<random port>/mcp`. */
  url: URL;
  /** Drops every connection (a held stream too), then the listener. */
  close(): Promise<void>;
}

/** Writes `text`, one JSON-RPC message, as the whole answer to `res`. */
function reply(res: ServerResponse, answers: RawHttpMcpOptions["answers"], text: string): void {
  if (answers === "json") {
    res.writeHead(200, { "content-type": "application/json" }).end(text);
    return;
  }
  res
    .writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    .end(`event: message\ndata: ${text}\n\n`);
}

export async function startRawHttpMcp(options: RawHttpMcpOptions): Promise<RawHttpMcp> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    req.on("end", () => {
      if (req.method !== "POST") {
        res.writeHead(405).end();
        return;
      }
      const message = JSON.parse(body) as RawRequest;
      if (message.id === undefined) {
        res.writeHead(202).end();
        options.onNotification?.(message);
        return;
      }
      const answer = (result: unknown) =>
        reply(res, options.answers, JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
      if (message.method === "initialize") {
        answer({
          protocolVersion: message.params?.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: options.name, version: "1" },
        });
      } else if (message.method === "tools/list") {
        answer({ tools: [{ name: options.tool, inputSchema: { type: "object" } }] });
      } else {
        options.onRequest(message, res, (text) => reply(res, options.answers, text));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
