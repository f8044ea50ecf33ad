import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo } from "node:net";
import { createGovernor, type DecisionEvent, type HostError } from "@governor/core";
import { createFaultServer } from "@governor/testkit";
import {
  Client as V2Client,
  SSEClientTransport as V2SSEClientTransport,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { governClient, toModelResult } from "./client.ts";
import { mapSdkError } from "./map-error.ts";
import { captureRetryAfter } from "./retry-after.ts";

/** An HTTP answer to the next POSTs of `tools/call`, before the SSE transport sees them. */
interface PostFault {
  status: number;
  retryAfter?: string;
  body?: string;
  times: number;
}

/** What the server's body quotes: an internal id the model must never read. */
const SECRET = "sk-live-9f8e7d6c5b4a39281706";

/**
 * The fault server over the SDK's legacy SSE transport (`SSEServerTransport`, SDK 1.32) on a
 * loopback port: `GET /sse` opens a session, `POST /messages?sessionId=…` carries the messages.
 * An armed fault answers a `tools/call` POST with its status before the session sees it.
 */
async function startSseServer() {
  const sessions = new Map<string, SSEServerTransport>();
  const faults: PostFault[] = [];
  const toolCalls: number[] = [];
  let refuseStream: number | undefined;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "GET" && url.pathname === "/sse" && refuseStream !== undefined) {
      res.writeHead(refuseStream, { "content-type": "text/plain" }).end(`stream of ${SECRET}`);
      return;
    }
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      res.on("close", () => sessions.delete(transport.sessionId));
      await createFaultServer().connect(transport);
      return;
    }
    const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
    if (req.method !== "POST" || url.pathname !== "/messages" || transport === undefined) {
      res.writeHead(404).end("Not Found");
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const isCall = (body as { method?: unknown }).method === "tools/call";
    const fault = isCall ? faults.find((f) => f.times > 0) : undefined;
    if (fault) {
      fault.times--;
      toolCalls.push(fault.status);
      res
        .writeHead(fault.status, {
          "content-type": "text/plain",
          ...(fault.retryAfter !== undefined && { "retry-after": fault.retryAfter }),
        })
        .end(fault.body ?? `${fault.status} ${STATUS_CODES[fault.status] ?? ""}`);
      return;
    }
    if (isCall) toolCalls.push(202);
    await transport.handlePostMessage(req, res, body);
  };
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/sse`),
    fault: (fault: Omit<PostFault, "times"> & { times?: number }) =>
      void faults.push({ times: 1, ...fault }),
    /** Answers every `GET /sse` with `status` (the event stream never opens). */
    refuseStream: (status: number) => {
      refuseStream = status;
    },
    /** The status each `tools/call` POST got (202: the session took it). */
    toolCalls,
    close: async () => {
      await Promise.all([...sessions.values()].map((t) => t.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server, a real SDK client over SSE (1.32 or 2.x) and a governed client with a Retry-After capture. */
async function setup(sdk: "1.32" | "2.x", withReconnect = false) {
  const server = await startSseServer();
  cleanups.push(server.close);
  const retryAfter = captureRetryAfter();
  const info = { name: "sse-test", version: "0.1.0" };
  const client = sdk === "1.32" ? new Client(info) : (new V2Client(info) as unknown as Client);
  const transport = () =>
    (sdk === "1.32"
      ? new SSEClientTransport(server.url, { fetch: retryAfter.fetch })
      : new V2SSEClientTransport(server.url, {
          fetch: retryAfter.fetch,
        })) as SSEClientTransport;
  await client.connect(transport());
  let reconnects = 0;
  const reconnect = async () => {
    reconnects++;
    await client.connect(transport());
  };
  cleanups.push(() => client.close());
  const hostErrors: HostError[] = [];
  const decisions: DecisionEvent[] = [];
  const governor = createGovernor(
    { defaults: { retry: { baseDelayMs: 1, maxDelayMs: 2 } }, retryBudget: { reserve: 1000 } },
    {
      metrics: false,
      onHostError: (e) => void hostErrors.push(e),
      onDecision: (e) => void decisions.push(e),
    },
  );
  const governed = governClient(client, {
    governor,
    server: "notes",
    retryAfter,
    ...(withReconnect && { reconnect }),
  });
  const call = () =>
    governed.callTool(governor.startRun(), { name: "get_note", arguments: { id: "welcome" } });
  return { server, call, hostErrors, decisions, reconnects: () => reconnects };
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe.each(["1.32", "2.x"] as const)("over the legacy SSE transport (SDK %s)", (sdk) => {
  it("a POST refused with 503 is retried (refused: certainty failed), then succeeds", async () => {
    const t = await setup(sdk);
    t.server.fault({ status: 503 });
    const outcome = await t.call();
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(t.server.toolCalls).toEqual([503, 202]);
    expect(t.decisions).toHaveLength(1);
    expect(t.decisions[0]).toMatchObject({
      action: "retry_dependency",
      reason: "unavailable",
      certainty: "failed",
    });
    expect(t.decisions[0]?.input?.failure).toMatchObject({
      channel: "local",
      local: "http_status",
      httpStatus: 503,
    });
    expect(t.hostErrors).toEqual([]);
  });

  it("a 429 with Retry-After is retried after the server's hint", async () => {
    const t = await setup(sdk);
    t.server.fault({ status: 429, retryAfter: "1" });
    const outcome = await t.call();
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(t.server.toolCalls).toEqual([429, 202]);
    const decision = t.decisions[0];
    expect(decision).toMatchObject({ action: "retry_dependency", reason: "rate_limited" });
    expect(decision?.input?.failure.retryAfterMs).toBeGreaterThan(900);
    // The backoff honours the hint (the policy's own backoff is at most 2 ms).
    expect(decision?.delayMs).toBeGreaterThan(900);
  });

  it.each([
    [401, "unauthorized"],
    [403, "forbidden"],
  ] as const)(
    "a POST refused with %i stops the run (%s), never retried",
    async (status, reason) => {
      const t = await setup(sdk);
      t.server.fault({ status, body: `denied for tenant ${SECRET}`, times: 5 });
      const outcome = await t.call();
      expect(outcome).toMatchObject({ kind: "stop", reason });
      expect(t.server.toolCalls).toEqual([status]);
      expect(t.decisions[0]).toMatchObject({ action: "stop", reason, certainty: "failed" });
      if (outcome.kind === "ok") return;
      expect(text(toModelResult(outcome))).not.toContain(SECRET);
    },
  );

  it("a POST refused with 404 (session gone) reconnects with the host's hook, then the call succeeds", async () => {
    const t = await setup(sdk, true);
    t.server.fault({ status: 404, body: "Session not found" });
    const outcome = await t.call();
    expect(outcome).toMatchObject({ kind: "ok" });
    expect(t.reconnects()).toBe(1);
    expect(t.server.toolCalls).toEqual([404, 202]);
    expect(t.hostErrors).toEqual([]);
  });

  it("SseError: a stream refused with 503 while connecting is read by its status", async () => {
    const server = await startSseServer();
    cleanups.push(server.close);
    server.refuseStream(503);
    const transport =
      sdk === "1.32" ? new SSEClientTransport(server.url) : new V2SSEClientTransport(server.url);
    const error: unknown = await transport.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    cleanups.push(() => transport.close());
    expect(error).toMatchObject({ code: 503 });
    expect(mapSdkError(error)).toMatchObject({
      channel: "local",
      local: "http_status",
      httpStatus: 503,
      text: "HTTP 503 Service Unavailable",
    });
  });

  it("the response body (internal ids) never reaches the model: it reads the status", async () => {
    const t = await setup(sdk);
    t.server.fault({
      status: 503,
      body: `pool db-7 exhausted; key ${SECRET} (req 0x7f3a)`,
      times: 10,
    });
    const outcome = await t.call();
    expect(outcome.kind).not.toBe("ok");
    if (outcome.kind === "ok") return;
    const read = text(toModelResult(outcome));
    expect(read).toContain("HTTP 503 Service Unavailable");
    expect(read).not.toMatch(/sk-live|db-7|0x7f3a/);
    expect(t.server.toolCalls.length).toBeGreaterThan(1);
    for (const decision of t.decisions) {
      expect(decision.input?.failure.text ?? "").not.toMatch(/sk-live|db-7|0x7f3a/);
    }
  });
});
