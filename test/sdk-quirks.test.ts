/**
 * Pins the @modelcontextprotocol/sdk 1.32 behaviours Governor relies on (docs/architecture.md §2–§3), against
 * the real client and the testkit's servers. If an SDK upgrade changes one of them, this file
 * fails, and the adapter's mapping must be revisited before the pin is updated.
 */
import { getEventListeners } from "node:events";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  connectHttp,
  connectInMemory,
  connectStdio,
  createFaultServer,
  createLowLevelServer,
  type HttpFaultServer,
  startHttpServer,
  waitForExit,
} from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  type CallToolResult,
  McpError,
  UrlElicitationRequiredError,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { rejection } from "./support/rejection.ts";

const clients: Client[] = [];
const httpServers: HttpFaultServer[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(httpServers.splice(0).map((s) => s.close()));
});

async function inMemory(server: Parameters<typeof connectInMemory>[0]) {
  const connected = await connectInMemory(server);
  clients.push(connected.client);
  return connected;
}

function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  options: Parameters<Client["callTool"]>[2] = { timeout: 1000 },
): Promise<CallToolResult> {
  return client.callTool({ name, arguments: args }, undefined, options) as Promise<CallToolResult>;
}

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

function sdkVersion(): string {
  let dir = dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/types.js"));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version: string;
      };
      if (pkg.name === "@modelcontextprotocol/sdk") return pkg.version;
    } catch {
      // keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error("SDK package.json not found");
    dir = parent;
  }
}

describe("@modelcontextprotocol/sdk quirks Governor relies on", () => {
  it("is SDK 1.32.x with a 60 s default request timeout", () => {
    expect(sdkVersion()).toMatch(/^1\.32\./);
    expect(DEFAULT_REQUEST_TIMEOUT_MSEC).toBe(60_000);
  });

  describe("(a) McpServer reports protocol-ish failures as isError results", () => {
    it("unknown tool → isError 'MCP error -32602: Tool X not found'", async () => {
      const { client } = await inMemory(createFaultServer());
      const result = await call(client, "no_such_tool");
      expect(result).toEqual({
        content: [{ type: "text", text: "MCP error -32602: Tool no_such_tool not found" }],
        isError: true,
      });
    });

    it("input-schema failure → isError 'MCP error -32602: Input validation error: …'", async () => {
      const { client } = await inMemory(createFaultServer());
      const result = await call(client, "search_notes", { query: "x", limit: "ten" });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(
        "MCP error -32602: Input validation error: Invalid arguments for tool search_notes: " +
          "Invalid input: expected number, received string at limit",
      );
      const missing = await call(client, "get_note", {});
      expect(textOf(missing)).toBe(
        "MCP error -32602: Input validation error: Invalid arguments for tool get_note: " +
          "Invalid input: expected string, received undefined at id",
      );
    });

    it("a thrown Error becomes isError with its message only (no stack)", async () => {
      const server = new McpServer({ name: "throws", version: "1.0.0" });
      server.registerTool("throws", { inputSchema: {} }, () => {
        throw new Error("boom at /srv/app/handler.js:3");
      });
      server.registerTool("throws_mcp", { inputSchema: {} }, () => {
        throw new McpError(-32603, "inner");
      });
      const { client } = await inMemory(server);
      expect(await call(client, "throws")).toEqual({
        content: [{ type: "text", text: "boom at /srv/app/handler.js:3" }],
        isError: true,
      });
      expect(textOf(await call(client, "throws_mcp"))).toBe("MCP error -32603: inner");
    });
  });

  describe("(b) a low-level Server's JSON-RPC errors reject as McpError", () => {
    it("-32602 unknown tool / bad arguments, -32603 internal with data verbatim", async () => {
      const { client } = await inMemory(createLowLevelServer());
      const unknown = await rejection(call(client, "nope"));
      expect(unknown).toBeInstanceOf(McpError);
      expect(unknown).toMatchObject({ code: -32602, data: undefined });
      expect((unknown as McpError).message).toBe("MCP error -32602: Unknown tool: nope");
      const bad = await rejection(call(client, "echo", { text: 3 }));
      expect((bad as McpError).code).toBe(-32602);
      expect((bad as McpError).message).toBe(
        'MCP error -32602: Invalid arguments for tool echo: "text" must be a string',
      );
      const internal = await rejection(call(client, "internal"));
      expect((internal as McpError).code).toBe(-32603);
      expect((internal as McpError).data).toEqual({
        detail: expect.stringContaining("postgres://"),
      });
    });

    it("a peer's -32001 with data.timeout has exactly the shape of the local timeout", async () => {
      const { client } = await inMemory(createLowLevelServer());
      const peer = await rejection(
        call(client, "peer_error", {
          code: -32001,
          message: "Request timed out",
          data: { timeout: 5 },
        }),
      );
      expect(peer).toBeInstanceOf(McpError);
      expect(peer).toMatchObject({
        code: -32001,
        message: "MCP error -32001: Request timed out",
        data: { timeout: 5 },
      });
    });

    it("-32042 with data.elicitations becomes UrlElicitationRequiredError", async () => {
      const { client } = await inMemory(createLowLevelServer());
      const elicitations = [
        { mode: "url", message: "Sign in", url: "https://example.com/a", elicitationId: "e1" },
      ];
      const error = await rejection(
        call(client, "peer_error", {
          code: -32042,
          message: "Auth needed",
          data: { elicitations },
        }),
      );
      expect(error).toBeInstanceOf(UrlElicitationRequiredError);
      expect((error as UrlElicitationRequiredError).elicitations).toEqual(elicitations);
    });

    it("a handler that throws McpError sends its prefixed message: the client prefixes it twice", async () => {
      const { client } = await inMemory(createLowLevelServer());
      const error = await rejection(
        call(client, "throw_mcp_error", { code: -32603, message: "boom" }),
      );
      expect((error as McpError).message).toBe("MCP error -32603: MCP error -32603: boom");
    });
  });

  describe("(c) timeouts and aborts", () => {
    it("a request timeout rejects with McpError -32001 and data.timeout", async () => {
      const { client } = await inMemory(createFaultServer());
      const error = await rejection(call(client, "slow", { ms: 5000 }, { timeout: 200 }));
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({
        code: -32001,
        message: "MCP error -32001: Request timed out",
        data: { timeout: 200 },
      });
    });

    it("a caller abort rejects with McpError -32001 whose message is String(reason), no data", async () => {
      const { client } = await inMemory(createFaultServer());
      const plain = new AbortController();
      setTimeout(() => plain.abort(), 30);
      const aborted = await rejection(call(client, "slow", { ms: 5000 }, { signal: plain.signal }));
      expect(aborted).toBeInstanceOf(McpError);
      expect(aborted).toMatchObject({
        code: -32001,
        message: "MCP error -32001: AbortError: This operation was aborted",
        data: undefined,
      });

      const withReason = new AbortController();
      setTimeout(() => withReason.abort("run cancelled"), 30);
      const reasoned = await rejection(
        call(client, "slow", { ms: 5000 }, { signal: withReason.signal }),
      );
      expect(reasoned).toMatchObject({ code: -32001, message: "MCP error -32001: run cancelled" });

      const own = new McpError(-32099, "mine");
      const withMcpError = new AbortController();
      setTimeout(() => withMcpError.abort(own), 30);
      expect(
        await rejection(call(client, "slow", { ms: 5000 }, { signal: withMcpError.signal })),
      ).toBe(own);
    });

    it("an already-aborted signal rejects with a plain DOMException AbortError, not McpError", async () => {
      const { client } = await inMemory(createFaultServer());
      const error = await rejection(
        call(client, "slow", { ms: 5000 }, { signal: AbortSignal.abort() }),
      );
      expect(error).not.toBeInstanceOf(McpError);
      expect(error).toBeInstanceOf(DOMException);
      expect(error).toMatchObject({ name: "AbortError", message: "This operation was aborted" });
    });

    it("maxTotalTimeout expiry: -32001 'Maximum total timeout exceeded' without data.timeout", async () => {
      const { client } = await inMemory(createFaultServer());
      const error = await rejection(
        call(
          client,
          "slow",
          { ms: 5000, progress_every_ms: 20 },
          {
            timeout: 200,
            resetTimeoutOnProgress: true,
            maxTotalTimeout: 120,
            onprogress: () => {},
          },
        ),
      );
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({
        code: -32001,
        message: "MCP error -32001: Maximum total timeout exceeded",
        data: { maxTotalTimeout: 120, totalElapsed: expect.any(Number) },
      });
      expect((error as McpError).data).not.toHaveProperty("timeout");
    });
  });

  describe("(c2) answers after the timeout", () => {
    it("a late answer only fires onerror, with the whole response JSON (tool output included) in its message", async () => {
      const { client } = await inMemory(createLowLevelServer());
      const reported: Error[] = [];
      client.onerror = (error) => void reported.push(error);
      const error = await rejection(call(client, "late_answer", { ms: 150 }, { timeout: 50 }));
      expect(error).toMatchObject({ code: -32001 });
      const deadline = Date.now() + 3000;
      while (reported.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(reported).toHaveLength(1);
      expect(reported[0]?.message).toMatch(
        /^Received a response for an unknown message ID: \{"result":\{"content":\[\{"type":"text","text":"Report ready\. .*"id":\d+\}$/,
      );
      expect(reported[0]?.message).toContain("sk-live-");
    });
  });

  describe("(d) closed connections", () => {
    it("a connection closed mid-call rejects with McpError -32000 'Connection closed'; later calls with Error('Not connected')", async () => {
      const { client } = await inMemory(createFaultServer());
      const closed = await rejection(call(client, "exit_now"));
      expect(closed).toBeInstanceOf(McpError);
      expect(closed).toMatchObject({
        code: -32000,
        message: "MCP error -32000: Connection closed",
        data: undefined,
      });
      const after = await rejection(call(client, "get_note", { id: "welcome" }));
      expect(after).not.toBeInstanceOf(McpError);
      expect(after).toBeInstanceOf(Error);
      expect((after as Error).message).toBe("Not connected");
    });
  });

  describe("(e) stdio transport", () => {
    it("a non-JSON line on stdout only fires onerror; the call ends by timeout; exit → -32000", async () => {
      const { client, transport } = await connectStdio();
      clients.push(client);
      const errors: Error[] = [];
      client.onerror = (e) => errors.push(e);
      const error = await rejection(call(client, "junk_stdout", {}, { timeout: 300 }));
      expect(error).toMatchObject({ code: -32001, data: { timeout: 300 } });
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(SyntaxError);

      const pid = transport.pid ?? 0;
      const closed = await rejection(call(client, "exit_now"));
      expect(closed).toMatchObject({
        code: -32000,
        message: "MCP error -32000: Connection closed",
      });
      expect(await waitForExit(pid)).toBe(true);
    });

    it("a command that cannot be spawned rejects connect with the spawn error (code ENOENT)", async () => {
      const client = new Client({ name: "quirks", version: "1.0.0" });
      const transport = new StdioClientTransport({
        command: "/nonexistent/governor-testkit-server",
        stderr: "ignore",
      });
      const error = await rejection(client.connect(transport));
      expect(error).not.toBeInstanceOf(McpError);
      expect(error).toMatchObject({
        code: "ENOENT",
        syscall: "spawn /nonexistent/governor-testkit-server",
      });
    });
  });

  describe("(f) a result failing the CallToolResult schema", () => {
    it("rejects with zod's core $ZodError (not McpError, not zod classic ZodError)", async () => {
      const { client } = await inMemory(createLowLevelServer());
      const error = await rejection(call(client, "bad_result"));
      expect(error).not.toBeInstanceOf(McpError);
      expect(error).toBeInstanceOf(z.core.$ZodError);
      expect(error).not.toBeInstanceOf(z.ZodError);
      expect((error as Error).name).toBe("$ZodError");
      expect((error as object).constructor.name).toBe("$ZodError");
      expect((error as z.core.$ZodError).issues[0]).toMatchObject({
        code: "invalid_type",
        expected: "array",
        path: ["content"],
      });
    });
  });

  describe("(g) abort listeners leak", () => {
    it("one long-lived signal over N calls keeps N listeners; aborting it cancels N finished requests", async () => {
      const { client, clientTransport } = await inMemory(createFaultServer());
      const sent: string[] = [];
      const send = clientTransport.send.bind(clientTransport);
      clientTransport.send = (message, options) => {
        if ("method" in message) sent.push(message.method);
        return send(message, options);
      };
      const run = new AbortController();
      const N = 5;
      for (let i = 0; i < N; i++) {
        await call(client, "get_note", { id: "welcome" }, { signal: run.signal, timeout: 1000 });
      }
      expect(getEventListeners(run.signal, "abort")).toHaveLength(N);
      run.abort();
      expect(sent.filter((m) => m === "notifications/cancelled")).toHaveLength(N);
    });
  });

  describe("(h) output-schema checks on the client", () => {
    it("an isError result whose structuredContent breaks the outputSchema is thrown away (#1943)", async () => {
      const { client } = await inMemory(createFaultServer());
      // Before listTools the client has no validator: the error result arrives intact.
      const raw = await call(client, "typed_note", { id: "nope" });
      expect(raw.isError).toBe(true);
      expect(raw.structuredContent).toEqual({ error: { status: 404, code: "not_found" } });

      await client.listTools();
      const error = await rejection(call(client, "typed_note", { id: "nope" }));
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({
        code: -32602,
        message:
          "MCP error -32602: Structured content does not match the tool's output schema: " +
          "data must have required property 'id', data must have required property 'title', " +
          "data must NOT have additional properties",
      });
    });

    it("an isError result without structuredContent passes; a success without it is -32600", async () => {
      const { client } = await inMemory(
        createFaultServer({ scenario: { typed_note: [{ kind: "error", text: "plain failure" }] } }),
      );
      await client.listTools();
      const result = await call(client, "typed_note", { id: "welcome" });
      expect(result).toEqual({ content: [{ type: "text", text: "plain failure" }], isError: true });

      const low = await inMemory(createLowLevelServer());
      await low.client.listTools();
      const missing = await rejection(call(low.client, "typed_missing"));
      expect(missing).toMatchObject({
        code: -32600,
        message:
          "MCP error -32600: Tool typed_missing has an output schema but did not return structured content",
      });
      const wrong = await rejection(call(low.client, "typed_wrong"));
      expect(wrong).toMatchObject({
        code: -32602,
        message:
          "MCP error -32602: Structured content does not match the tool's output schema: " +
          "data/value must be string",
      });
    });
  });

  describe("Streamable HTTP client errors", () => {
    it("HTTP status → StreamableHTTPError with only code and message (Retry-After is lost)", async () => {
      const server = await startHttpServer({ httpFaults: [{ status: 429, retryAfter: 3 }] });
      httpServers.push(server);
      const { client } = await connectHttp(server.url);
      clients.push(client);
      const error = await rejection(call(client, "get_note", { id: "welcome" }));
      expect(error).toBeInstanceOf(StreamableHTTPError);
      expect(Object.keys(error as object)).toEqual(["code"]);
      expect(error).toMatchObject({
        code: 429,
        message: "Streamable HTTP error: Error POSTing to endpoint: 429 Too Many Requests",
      });
    });

    it("expired session → 404; dropped connection → TypeError 'fetch failed' (UND_ERR_SOCKET)", async () => {
      const server = await startHttpServer();
      httpServers.push(server);
      const { client } = await connectHttp(server.url);
      clients.push(client);
      const dropped = await rejection(call(client, "exit_now"));
      expect(dropped).toBeInstanceOf(TypeError);
      expect(dropped).toMatchObject({ message: "fetch failed", cause: { code: "UND_ERR_SOCKET" } });
      await server.expireSessions();
      const expired = await rejection(call(client, "get_note", { id: "welcome" }));
      expect(expired).toBeInstanceOf(StreamableHTTPError);
      expect((expired as StreamableHTTPError).code).toBe(404);
    });

    it("closing the transport rejects every pending call with -32000 at once, before its own 404 arrives (why the adapter waits for them)", async () => {
      const server = await startHttpServer();
      httpServers.push(server);
      const { client } = await connectHttp(server.url);
      clients.push(client);
      await server.expireSessions();
      const pending = [1, 2, 3].map((i) => rejection(call(client, "append_log", { line: `${i}` })));
      await client.close();
      for (const error of await Promise.all(pending)) {
        expect(error).toBeInstanceOf(McpError);
        expect(error).toMatchObject({
          code: -32000,
          message: "MCP error -32000: Connection closed",
        });
      }
      expect(server.state.calls("append_log")).toBe(0);
    });

    it("connect() holds the new transport before initialize answers: a request sent then has no session id (HTTP 400)", async () => {
      const server = await startHttpServer();
      httpServers.push(server);
      const client = new Client({ name: "quirks", version: "0.1.0" });
      clients.push(client);
      const { StreamableHTTPClientTransport } = await import(
        "@modelcontextprotocol/sdk/client/streamableHttp.js"
      );
      const connecting = client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      expect(client.transport).toBeDefined();
      const early = await rejection(call(client, "get_note", { id: "welcome" }));
      await connecting;
      expect(early).toBeInstanceOf(StreamableHTTPError);
      expect((early as StreamableHTTPError).code).toBe(400);
    });

    it("nothing listening → connect rejects with TypeError 'fetch failed' (ECONNREFUSED)", async () => {
      const server = await startHttpServer();
      await server.close();
      const error = await rejection(connectHttp(server.url));
      expect(error).toBeInstanceOf(TypeError);
      expect(error).toMatchObject({ message: "fetch failed", cause: { code: "ECONNREFUSED" } });
    });
  });
});
