import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { connectHttp, connectStdio, processExists, waitForExit } from "./clients.ts";
import { countDuplicateWrites, readEffects } from "./effects.ts";
import { IDEMPOTENCY_META_KEY } from "./fault-server.ts";
import { type HttpFaultServer, type HttpFaultServerOptions, startHttpServer } from "./http.ts";
import type { StdioFaultServerOptions } from "./stdio.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-testkit-transports-"));
const clients: Client[] = [];
const pids: number[] = [];
const servers: HttpFaultServer[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const pid of pids.splice(0)) expect(await waitForExit(pid)).toBe(true);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function stdio(options: StdioFaultServerOptions = {}) {
  const connected = await connectStdio(options);
  clients.push(connected.client);
  const pid = connected.transport.pid;
  if (pid !== null) pids.push(pid);
  return { ...connected, pid };
}

async function http(options: HttpFaultServerOptions = {}) {
  const server = await startHttpServer(options);
  servers.push(server);
  return server;
}

async function httpClient(url: string, fetchImpl?: typeof fetch) {
  const connected = await connectHttp(url, fetchImpl);
  clients.push(connected.client);
  return connected;
}

function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
  timeout = 1000,
): Promise<CallToolResult> {
  return client.callTool(
    { name, arguments: args, ...(meta !== undefined ? { _meta: meta } : {}) },
    undefined,
    { timeout },
  ) as Promise<CallToolResult>;
}

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe("over stdio (child process)", () => {
  it("drops the response after the commit, and a restarted server replays the same key", async () => {
    const effectsFile = join(dir, "stdio-drop.jsonl");
    const meta = { [IDEMPOTENCY_META_KEY]: "k-stdio" };
    const first = await stdio({ effectsFile });
    const missing = await call(first.client, "get_note", { id: "drafts" });
    expect(textOf(missing)).toBe('No note with id "drafts". Known ids: welcome, release-notes');

    const error = await call(first.client, "write_then_drop", { title: "t" }, meta).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32000);
    expect((error as McpError).message).toBe("MCP error -32000: Connection closed");
    expect(first.pid).not.toBeNull();
    expect(await waitForExit(first.pid ?? 0)).toBe(true);
    expect(readEffects(effectsFile)).toHaveLength(1);

    const second = await stdio({ effectsFile });
    const replay = await call(second.client, "write_then_drop", { title: "t" }, meta);
    expect(textOf(replay)).toBe('Wrote "t" (write 1) (replayed)');
    expect(readEffects(effectsFile)).toHaveLength(1);
    await call(second.client, "write_then_drop", { title: "t" });
    await call(second.client, "write_then_drop", { title: "t" });
    const effects = readEffects(effectsFile);
    expect(effects.map((e) => e.key)).toEqual(["k-stdio", undefined, undefined]);
    expect(countDuplicateWrites(effects)).toBe(1);
  });

  it("exit_now ends the call with -32000 Connection closed and the process exits", async () => {
    const { client, pid } = await stdio({
      scenario: { get_note: [{ kind: "hang", ms: 5 }] },
    });
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
    const error = await call(client, "exit_now").catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32000);
    expect(await waitForExit(pid ?? 0)).toBe(true);
    expect(processExists(pid ?? 0)).toBe(false);
  });

  it("junk_stdout: the client's onerror fires and the call ends by timeout", async () => {
    const { client } = await stdio();
    const errors: Error[] = [];
    client.onerror = (e) => errors.push(e);
    const error = await call(client, "junk_stdout", {}, undefined, 300).catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32001);
    expect(errors.some((e) => e instanceof SyntaxError)).toBe(true);
    // The server is still usable after the junk line.
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
  });

  it("the low-level server sends JSON-RPC errors and a malformed result", async () => {
    const { client } = await stdio({ lowlevel: true });
    const unknown = await call(client, "nope").catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(-32602);
    expect((unknown as McpError).message).toBe("MCP error -32602: Unknown tool: nope");
    const internal = await call(client, "internal").catch((e: unknown) => e);
    expect((internal as McpError).code).toBe(-32603);
    const bad = await call(client, "bad_result").catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(z.core.$ZodError);
  });
});

describe("over Streamable HTTP", () => {
  it("is sessionful and shares scenario counters and effects across sessions", async () => {
    const server = await http();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const a = await httpClient(server.url);
    const b = await httpClient(server.url);
    expect(a.transport.sessionId).toBeDefined();
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    expect(server.sessionCount()).toBe(2);
    expect(textOf(await call(a.client, "flaky_fetch", { url: "u" }))).toBe(
      "503 Service Unavailable",
    );
    expect(textOf(await call(b.client, "flaky_fetch", { url: "u" }))).toBe(
      "503 Service Unavailable",
    );
    expect((await call(a.client, "flaky_fetch", { url: "u" })).isError).toBeUndefined();
    await call(b.client, "append_log", { line: "x" });
    expect(server.state.effects().map((e) => e.tool)).toEqual(["append_log"]);
  });

  it("write_then_drop destroys the connection after the commit; the same key then replays", async () => {
    const effectsFile = join(dir, "http-drop.jsonl");
    const server = await http({ effectsFile });
    const { client } = await httpClient(server.url);
    const meta = { [IDEMPOTENCY_META_KEY]: "k-http" };
    const error = await call(client, "write_then_drop", { title: "t" }, meta).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe("fetch failed");
    expect(((error as TypeError).cause as { code?: string }).code).toBe("UND_ERR_SOCKET");
    expect(readEffects(effectsFile)).toHaveLength(1);
    const replay = await call(client, "write_then_drop", { title: "t" }, meta);
    expect(textOf(replay)).toBe('Wrote "t" (write 1) (replayed)');
    expect(readEffects(effectsFile)).toHaveLength(1);

    const exit = await call(client, "exit_now").catch((e: unknown) => e);
    expect((exit as TypeError).message).toBe("fetch failed");
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
  });

  it("answers HTTP 429/503 with Retry-After before any JSON-RPC handling", async () => {
    const server = await http({ httpFaults: [{ status: 429, retryAfter: 2, tool: "get_note" }] });
    const seen: { status: number; retryAfter: string | null }[] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      seen.push({ status: response.status, retryAfter: response.headers.get("retry-after") });
      return response;
    };
    const { client } = await httpClient(server.url, recording);
    expect((await call(client, "search_notes", { query: "x" })).isError).toBeUndefined();
    const limited = await call(client, "get_note", { id: "welcome" }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(StreamableHTTPError);
    expect((limited as StreamableHTTPError).code).toBe(429);
    expect((limited as Error).message).toBe(
      "Streamable HTTP error: Error POSTing to endpoint: 429 Too Many Requests",
    );
    expect(seen).toContainEqual({ status: 429, retryAfter: "2" });

    server.injectHttpFault({ status: 503, retryAfter: 1, times: 2 });
    for (let i = 0; i < 2; i++) {
      const e = await call(client, "get_note", { id: "welcome" }).catch((x: unknown) => x);
      expect((e as StreamableHTTPError).code).toBe(503);
    }
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
  });

  it("expireSessions makes the next request a 404 Session not found", async () => {
    const server = await http();
    const { client } = await httpClient(server.url);
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
    expect(await server.expireSessions()).toBe(1);
    const error = await call(client, "get_note", { id: "welcome" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(404);
    expect((error as Error).message).toContain('"message":"Session not found"');
  });

  it("serves the low-level server, and SSE responses when asked", async () => {
    const low = await http({ lowlevel: true });
    const { client } = await httpClient(low.url);
    const unknown = await call(client, "nope").catch((e: unknown) => e);
    expect((unknown as McpError).code).toBe(-32602);

    const sse = await http({ jsonResponse: false });
    const { client: c2 } = await httpClient(sse.url);
    expect(textOf(await call(c2, "get_note", { id: "welcome" }))).toContain("Welcome");
  });
});
