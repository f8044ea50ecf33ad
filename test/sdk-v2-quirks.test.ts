/**
 * Pins the @modelcontextprotocol/client 2.x behaviours Governor relies on, against the real v2
 * client and the testkit's (1.32) fault servers over stdio (child processes) and Streamable HTTP.
 * test/sdk-quirks.test.ts is the same for 1.32. If a 2.x upgrade changes one of these, this file
 * fails, and the adapter's mapping (packages/mcp/src/v2-errors.ts, sdk.ts) must be revisited
 * before the pin is updated.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type HttpFaultServer, startHttpServer, stdioServerParams } from "@governor/testkit";
import {
  type CallToolResult,
  Client,
  DEFAULT_REQUEST_TIMEOUT_MSEC,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  UrlElicitationRequiredError,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { mapSdkError } from "../packages/mcp/src/map-error.ts";
import { sdkGeneration } from "../packages/mcp/src/sdk.ts";
import { rejection } from "./support/rejection.ts";

const INFO = { name: "v2-quirks", version: "1.0.0" };
const closing: Client[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close().catch(() => undefined)));
});

/** One McpServer and one low-level server over stdio, shared by the tests that leave them up. */
let fault: { client: Client; errors: Error[] };
let low: { client: Client; errors: Error[] };
beforeAll(async () => {
  [fault, low] = await Promise.all([connectStdio(), connectStdio(true)]);
});
afterAll(async () => {
  await Promise.all([fault.client.close(), low.client.close()]);
});

async function connectStdio(lowlevel = false): Promise<{ client: Client; errors: Error[] }> {
  const client = new Client(INFO);
  const errors: Error[] = [];
  client.onerror = (error) => void errors.push(error);
  await client.connect(new StdioClientTransport(stdioServerParams({ lowlevel })));
  return { client, errors };
}

function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  options: Parameters<Client["callTool"]>[1] = { timeout: 2000 },
): Promise<CallToolResult> {
  return client.callTool({ name, arguments: args }, options);
}

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

function clientPackage(): { version: string; engines?: { node?: string } } {
  let dir = dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/client"));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        name?: string;
        version: string;
        engines?: { node?: string };
      };
      if (pkg.name === "@modelcontextprotocol/client") return pkg;
    } catch {
      // keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error("@modelcontextprotocol/client package.json not found");
    dir = parent;
  }
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe("@modelcontextprotocol/client 2.x quirks Governor relies on", () => {
  it("is 2.4.x, runs on Node >= 20, with a 60 s default request timeout", () => {
    const pkg = clientPackage();
    expect(pkg.version).toMatch(/^2\.4\./);
    expect(pkg.engines?.node).toBe(">=20");
    expect(DEFAULT_REQUEST_TIMEOUT_MSEC).toBe(60_000);
  });

  it("speaks the 2025 (legacy) era to a 1.32 server by default; the adapter tells the clients apart", async () => {
    const { client } = fault;
    expect(client.getProtocolEra()).toBe("legacy");
    expect(sdkGeneration(client)).toBe("v2");
    expect(sdkGeneration(new V1Client(INFO))).toBe("v1");
  });

  describe("(a) McpServer's protocol-ish failures are isError results, as with 1.32", () => {
    it("unknown tool and input-schema failure: isError, the server's 'MCP error -32602:' text", async () => {
      const { client } = fault;
      expect(await call(client, "no_such_tool")).toEqual({
        content: [{ type: "text", text: "MCP error -32602: Tool no_such_tool not found" }],
        isError: true,
      });
      const bad = await call(client, "search_notes", { query: "x", limit: "ten" });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/^MCP error -32602: Input validation error: /);
    });
  });

  describe("(b) JSON-RPC error responses reject as ProtocolError, message unprefixed", () => {
    it("-32602 / -32603: ProtocolError with the wire's code, message and data verbatim", async () => {
      const unknown = await rejection(call(low.client, "nope"));
      expect(unknown).toBeInstanceOf(ProtocolError);
      expect(unknown).not.toBeInstanceOf(SdkError);
      // 1.32 says "MCP error -32602: Unknown tool: nope".
      expect(unknown).toMatchObject({ name: "ProtocolError", code: -32602, data: undefined });
      expect((unknown as Error).message).toBe("Unknown tool: nope");
      const internal = await rejection(call(low.client, "internal"));
      expect(internal).toMatchObject({ code: -32603, data: { detail: expect.any(String) } });
      expect((internal as ProtocolError).data).toEqual({
        detail: expect.stringContaining("postgres://"),
      });
    });

    it("a peer's -32001 / -32000 stay ProtocolErrors: never confused with the SDK's own timeout or close", async () => {
      const timeout = await rejection(
        call(low.client, "peer_error", {
          code: -32001,
          message: "Request timed out",
          data: { timeout: 5 },
        }),
      );
      expect(timeout).toBeInstanceOf(ProtocolError);
      expect(timeout).toMatchObject({ code: -32001, data: { timeout: 5 } });
      const closed = await rejection(
        call(low.client, "peer_error", { code: -32000, message: "Connection closed" }),
      );
      expect(closed).toBeInstanceOf(ProtocolError);
      expect(closed).toMatchObject({ code: -32000, message: "Connection closed" });
      // So the adapter maps both to the peer, whatever it passes as call-site facts.
      expect(mapSdkError(timeout, { timeoutMs: 5 })).toMatchObject({
        channel: "protocol",
        origin: "peer",
        code: -32001,
      });
      expect(mapSdkError(closed, { connectionClosed: true })).toMatchObject({
        channel: "protocol",
        origin: "peer",
        code: -32000,
      });
    });

    it("-32042 with data.elicitations: UrlElicitationRequiredError, whose name stays 'ProtocolError'", async () => {
      const elicitations = [
        { mode: "url", message: "Sign in", url: "https://example.com/a", elicitationId: "e1" },
      ];
      const error = await rejection(
        call(low.client, "peer_error", {
          code: -32042,
          message: "Auth needed",
          data: { elicitations },
        }),
      );
      expect(error).toBeInstanceOf(UrlElicitationRequiredError);
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as Error).name).toBe("ProtocolError");
      expect((error as UrlElicitationRequiredError).elicitations).toEqual(elicitations);
      expect(mapSdkError(error)).toMatchObject({ channel: "protocol", code: -32042 });
    });

    it("a server's prefixed message arrives once prefixed (1.32 prefixes it twice)", async () => {
      const error = await rejection(
        call(low.client, "throw_mcp_error", { code: -32603, message: "boom" }),
      );
      expect((error as Error).message).toBe("MCP error -32603: boom");
    });

    it("a result failing the result schema: SdkError INVALID_RESULT (1.32: zod's $ZodError)", async () => {
      const error = await rejection(call(low.client, "bad_result"));
      expect(error).toBeInstanceOf(SdkError);
      expect(error).toMatchObject({ code: SdkErrorCode.InvalidResult });
      expect((error as Error).message).toMatch(/^Invalid result for tools\/call: /);
    });

    it("errors carry brands under Symbol.for('mcp.sdk.errorBrands'), which the adapter reads without importing 2.x", async () => {
      const error = await rejection(call(low.client, "nope"));
      const brands = (error as Record<symbol, unknown>)[Symbol.for("mcp.sdk.errorBrands")];
      expect(brands).toBeInstanceOf(Set);
      expect([...(brands as Set<string>)]).toContain("mcp.ProtocolError");
      const sdk = new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, "x", { status: 503 });
      const sdkBrands = (sdk as unknown as Record<symbol, Set<string>>)[
        Symbol.for("mcp.sdk.errorBrands")
      ];
      expect([...(sdkBrands ?? [])].sort()).toEqual(["mcp.SdkError", "mcp.SdkHttpError"]);
    });

    it("a late answer only fires onerror, quoting the whole response (tool output included)", async () => {
      low.errors.length = 0;
      const error = await rejection(call(low.client, "late_answer", { ms: 150 }, { timeout: 50 }));
      expect(error).toMatchObject({ code: SdkErrorCode.RequestTimeout, data: { timeout: 50 } });
      await until(() => low.errors.length > 0);
      expect(low.errors).toHaveLength(1);
      expect(low.errors[0]?.message).toMatch(
        /^Received a response for an unknown message ID: \{"jsonrpc":"2\.0","id":\d+,"result":\{"content":\[\{"type":"text","text":"Report ready\. /,
      );
      expect(low.errors[0]?.message).toContain("sk-live-");
    });
  });

  describe("(c) timeouts and aborts are all SdkError REQUEST_TIMEOUT", () => {
    it("the SDK's timer: data.timeout; a caller's abort: String(reason) and no data; already aborted: the same (1.32: a DOMException)", async () => {
      const { client } = fault;
      const timedOut = await rejection(call(client, "slow", { ms: 5000 }, { timeout: 200 }));
      expect(timedOut).toBeInstanceOf(SdkError);
      expect(timedOut).toMatchObject({
        code: SdkErrorCode.RequestTimeout,
        message: "Request timed out",
        data: { timeout: 200 },
      });
      expect(mapSdkError(timedOut, { timeoutMs: 200 })).toMatchObject({
        channel: "local",
        local: "timeout",
        code: "REQUEST_TIMEOUT",
      });

      const plain = new AbortController();
      setTimeout(() => plain.abort(), 30);
      const aborted = await rejection(call(client, "slow", { ms: 5000 }, { signal: plain.signal }));
      expect(aborted).toMatchObject({
        name: "SdkError",
        code: SdkErrorCode.RequestTimeout,
        message: "AbortError: This operation was aborted",
        data: undefined,
      });
      expect(mapSdkError(aborted)).toMatchObject({ channel: "local", local: "aborted" });

      const reasoned = new AbortController();
      setTimeout(() => reasoned.abort("run cancelled"), 30);
      expect(
        await rejection(call(client, "slow", { ms: 5000 }, { signal: reasoned.signal })),
      ).toMatchObject({ code: SdkErrorCode.RequestTimeout, message: "run cancelled" });

      const already = await rejection(
        call(client, "slow", { ms: 5000 }, { signal: AbortSignal.abort() }),
      );
      expect(already).toBeInstanceOf(SdkError);
      expect(already).not.toBeInstanceOf(DOMException);
      expect(already).toMatchObject({
        code: SdkErrorCode.RequestTimeout,
        message: "AbortError: This operation was aborted",
      });
    });

    it("maxTotalTimeout expiry: data.maxTotalTimeout and totalElapsed, no data.timeout; nothing is cancelled, so progress keeps coming to onerror", async () => {
      // A client of its own: the call runs on at the server until 400 ms, and its late progress
      // and answer must not land in another test's errors on a shared client (the stdio test
      // below expects none, and failed in CI when it started before that answer came).
      const { client, errors } = await connectStdio();
      closing.push(client);
      const error = await rejection(
        call(
          client,
          "slow",
          { ms: 400, progress_every_ms: 20 },
          {
            timeout: 200,
            resetTimeoutOnProgress: true,
            maxTotalTimeout: 120,
            onprogress: () => {},
          },
        ),
      );
      expect(error).toMatchObject({
        code: SdkErrorCode.RequestTimeout,
        message: "Maximum total timeout exceeded",
        data: { maxTotalTimeout: 120, totalElapsed: expect.any(Number) },
      });
      expect((error as SdkError).data).not.toHaveProperty("timeout");
      expect(mapSdkError(error, { timeoutMs: 200 })).toMatchObject({ local: "timeout" });
      await until(() => errors.length > 0);
      expect(errors[0]?.message).toMatch(
        /^Received a progress notification for an unknown token: /,
      );
    });
  });

  describe("(d) closed connections", () => {
    it("closed mid-call: SdkError CONNECTION_CLOSED; later calls: a plain Error('Not connected'), not an SdkError", async () => {
      const { client } = await connectStdio();
      closing.push(client);
      const closed = await rejection(call(client, "exit_now"));
      expect(closed).toBeInstanceOf(SdkError);
      expect(closed).toMatchObject({
        code: SdkErrorCode.ConnectionClosed,
        message: "Connection closed",
      });
      expect(client.transport).toBeUndefined();
      expect(mapSdkError(closed)).toMatchObject({ local: "connection_closed" });
      const after = await rejection(call(client, "get_note", { id: "welcome" }));
      expect(after).not.toBeInstanceOf(SdkError);
      expect(after).toBeInstanceOf(Error);
      expect((after as Error).message).toBe("Not connected");
      expect(mapSdkError(after)).toMatchObject({ local: "not_connected" });
    });
  });

  describe("(e) stdio transport", () => {
    it("a line on stdout that is not JSON is skipped without a word (1.32 fires onerror); the call ends by its timeout", async () => {
      const { client, errors } = fault;
      errors.length = 0;
      const error = await rejection(call(client, "junk_stdout", {}, { timeout: 300 }));
      expect(error).toMatchObject({ code: SdkErrorCode.RequestTimeout, data: { timeout: 300 } });
      // The junk came first; a working call proves the stream was read past it.
      const after = await call(client, "get_note", { id: "welcome" });
      expect(after).not.toHaveProperty("isError");
      expect(textOf(after)).toContain("Welcome");
      expect(errors).toEqual([]);
    });

    it("a command that cannot be spawned rejects connect with the spawn error (code ENOENT)", async () => {
      const client = new Client(INFO);
      const error = await rejection(
        client.connect(
          new StdioClientTransport({ command: "/nonexistent/governor-testkit", stderr: "ignore" }),
        ),
      );
      expect(error).not.toBeInstanceOf(SdkError);
      expect(error).toMatchObject({ code: "ENOENT" });
      expect(mapSdkError(error)).toMatchObject({ local: "spawn_failed" });
    });
  });

  describe("(f) output-schema checks on the client", () => {
    it("an isError result keeps a structuredContent that breaks the outputSchema (1.32 throws it away, #1943)", async () => {
      const { client } = fault;
      await client.listTools();
      const result = await call(client, "typed_note", { id: "nope" });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toEqual({ error: { status: 404, code: "not_found" } });
    });

    it("checks only against a listing the client cached (listTools() without a cursor) or a toolDefinition; they throw ProtocolErrors with local texts", async () => {
      const { client } = low;
      // Never listed: no check.
      expect(await call(client, "typed_missing")).toEqual({
        content: [{ type: "text", text: "no structured content" }],
      });
      // One page by request(): no cache, still no check.
      const page = await client.request({ method: "tools/list" }, { timeout: 2000 });
      expect(await call(client, "typed_missing")).not.toHaveProperty("isError");
      // The adapter hands the definition it listed: checked.
      const definition = page.tools.find((t) => t.name === "typed_missing");
      if (!definition) throw new Error("typed_missing is not listed");
      const missing = await rejection(
        call(client, "typed_missing", {}, { timeout: 2000, toolDefinition: definition }),
      );
      expect(missing).toBeInstanceOf(ProtocolError);
      expect(missing).toMatchObject({
        code: -32600,
        message: "Tool typed_missing has an output schema but did not return structured content",
      });
      await client.listTools();
      const wrong = await rejection(call(client, "typed_wrong"));
      expect(wrong).toMatchObject({
        code: -32602,
        message:
          "Structured content does not match the tool's output schema: data/value must be string",
      });
      for (const error of [missing, wrong]) {
        expect(mapSdkError(error)).toMatchObject({ channel: "local", local: "malformed_result" });
      }
    });
  });

  describe("(g) Streamable HTTP", () => {
    let http: HttpFaultServer;
    let pages: HttpFaultServer;
    beforeAll(async () => {
      [http, pages] = await Promise.all([
        startHttpServer(),
        startHttpServer({ lowlevel: true, endlessToolPages: "fresh" }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([http.close(), pages.close()]);
    });
    async function connect(server: HttpFaultServer): Promise<Client> {
      const client = new Client(INFO);
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      closing.push(client);
      return client;
    }

    it("any non-OK status: SdkHttpError CLIENT_HTTP_NOT_IMPLEMENTED whatever the status, status in data, body in the message", async () => {
      const client = await connect(http);
      http.injectHttpFault({ status: 503, tool: "get_note", body: "upstream down" });
      const error = await rejection(call(client, "get_note", { id: "welcome" }));
      expect(error).toBeInstanceOf(SdkHttpError);
      expect(error).toMatchObject({
        code: SdkErrorCode.ClientHttpNotImplemented,
        message: "Error POSTing to endpoint: upstream down",
        data: { status: 503 },
      });
      expect((error as SdkHttpError).status).toBe(503);
      expect(mapSdkError(error)).toMatchObject({
        channel: "local",
        local: "http_status",
        httpStatus: 503,
        text: "HTTP 503 Service Unavailable",
      });
    });

    it("an expired session: 404 as the same SdkHttpError; the transport keeps its session id", async () => {
      const client = await connect(http);
      const transport = client.transport as StreamableHTTPClientTransport;
      const session = transport.sessionId;
      expect(await http.expireSessions()).toBeGreaterThan(0);
      const error = await rejection(call(client, "get_note", { id: "welcome" }));
      expect(error).toMatchObject({
        code: SdkErrorCode.ClientHttpNotImplemented,
        data: { status: 404 },
      });
      expect(transport.sessionId).toBe(session);
      expect(client.transport).toBe(transport);
    });

    it("listTools() without a cursor walks every page itself and gives up after 64 with LIST_PAGINATION_EXCEEDED (the adapter pages with request())", async () => {
      const client = await connect(pages);
      const error = await rejection(client.listTools(undefined, { timeout: 5000 }));
      expect(error).toMatchObject({
        code: SdkErrorCode.ListPaginationExceeded,
        data: { method: "tools/list", listMaxPages: 64 },
      });
      const first = await client.request({ method: "tools/list" }, { timeout: 2000 });
      expect(first.nextCursor).toEqual(expect.any(String));
    });
  });
});
