import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ReadBuffer } from "@modelcontextprotocol/sdk/shared/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { dispatchChecked, LineReadBuffer } from "./fast-path.ts";

/** Every message each buffer reads from `chunks`, or the error it threw, in order. */
function readAll(buffer: { append(c: Buffer): void; readMessage(): unknown }, chunks: Buffer[]) {
  const out: unknown[] = [];
  for (const chunk of chunks) {
    buffer.append(chunk);
    for (;;) {
      try {
        const message = buffer.readMessage();
        if (message === null) break;
        out.push(message);
      } catch {
        out.push("error");
      }
    }
  }
  return out;
}

const LINES = [
  { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "t", arguments: { q: "é" } } },
  { jsonrpc: "2.0", id: "a", result: { content: [{ type: "text", text: "日本語 ✓" }] } },
  { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found" } },
  { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } },
  { jsonrpc: "2.0", id: 3, method: "ping" },
];

describe("LineReadBuffer", () => {
  it("reads what the SDK's ReadBuffer reads, however the bytes are cut", () => {
    const bytes = Buffer.from(`${LINES.map((m) => JSON.stringify(m)).join("\n")}\r\n`);
    for (const size of [1, 2, 3, 7, 64, bytes.length]) {
      const chunks: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
      const ours = readAll(new LineReadBuffer(), chunks);
      expect(ours).toEqual(readAll(new ReadBuffer(), chunks));
      expect(ours).toEqual(LINES);
    }
  });

  it("throws where the SDK's throws: not JSON, not a JSON-RPC message", () => {
    const bad = [
      "{nope",
      "[1]",
      '"text"',
      '{"id":1,"method":"ping"}',
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '{"jsonrpc":"2.0","id":1}',
    ];
    for (const line of bad) {
      const chunks = [Buffer.from(`${line}\n${JSON.stringify(LINES[4])}\n`)];
      expect(readAll(new LineReadBuffer(), chunks), line).toEqual(["error", LINES[4]]);
      expect(readAll(new ReadBuffer(), chunks), line).toEqual(["error", LINES[4]]);
    }
  });
});

describe("dispatchChecked", () => {
  it("hands requests, responses and notifications to the Protocol as the SDK's handler does", async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = new Server(
      { name: "s", version: "1" },
      { capabilities: { tools: {}, logging: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: "echo", inputSchema: { type: "object" } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      await server.sendLoggingMessage({ level: "info", data: "called" });
      return { content: [{ type: "text", text: JSON.stringify(request.params.arguments) }] };
    });
    const client = new Client({ name: "c", version: "1" });
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params.data);
    });
    await server.connect(serverSide);
    await client.connect(clientSide);
    expect(dispatchChecked(server, serverSide)).toBe(true);
    expect(dispatchChecked(client, clientSide)).toBe(true);
    expect(await client.ping()).toEqual({});
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["echo"]);
    const result = await client.callTool({ name: "echo", arguments: { a: 1 } });
    expect(result.content).toEqual([{ type: "text", text: '{"a":1}' }]);
    await expect(
      client.request({ method: "prompts/list" } as never, CallToolRequestSchema as never),
    ).rejects.toThrow(/Method not found/);
    expect(logs).toEqual(["called"]);
  });

  it("leaves a protocol without the SDK's dispatch methods on its own path", () => {
    const transport = { onmessage: undefined } as never;
    expect(dispatchChecked({}, transport)).toBe(false);
  });
});
