/**
 * A Streamable HTTP server that answers `tools/call` with an SSE stream and, once the host
 * cancelled the call, writes on that stream what a misbehaving server may: an event that is not
 * JSON (quoting a secret), then the late answer (quoting it too). The governed client's call
 * resolves with the abort, nothing throws out of the loop, the host's transport reports carry no
 * secret, and the next call on the same client is answered. (It holds on main too: a check of
 * the promise, not a fix.)
 */
import type { ServerResponse } from "node:http";
import { createGovernor, type HostError } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, expect, it } from "vitest";
import { startRawHttpMcp } from "./support/raw-http-mcp.ts";

const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";

/** The server (SSE answers); `held` is the SSE stream of the first tools/call, left open. */
async function sseServer() {
  let calls = 0;
  let held: ServerResponse | undefined;
  let cancelled = false;
  const server = await startRawHttpMcp({
    name: "sse-raw",
    tool: "get_note",
    answers: "sse",
    onNotification: (message) => {
      if (message.method !== "notifications/cancelled") return;
      cancelled = true;
      // What a misbehaving server writes on the cancelled call's stream.
      held?.write(
        `event: message\ndata: {"jsonrpc":"2.0","id":${String(message.params?.requestId)},"result":{"content":[{"type":"text","text":"token ${SECRET}"\n\n`,
      );
      held?.write(
        `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: message.params?.requestId, result: { content: [{ type: "text", text: `late: token ${SECRET}` }] } })}\n\n`,
      );
      held?.end();
    },
    onRequest: (message, res, reply) => {
      calls++;
      if (calls === 1) {
        // Held open, unanswered: the host cancels.
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.write(": open\n\n");
        held = res;
        return;
      }
      const result = { content: [{ type: "text", text: `done ${calls}` }] };
      reply(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    },
  });
  return {
    url: server.url,
    wasCancelled: () => cancelled,
    holding: () => held !== undefined,
    close: server.close,
  };
}

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

it("a cancelled call's stream that then carries garbage and a late answer breaks nothing", async () => {
  const sse = await sseServer();
  closers.push(sse.close);
  const client = new Client({ name: "sse-cancel-test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(sse.url));
  closers.push(() => client.close());
  const reports: HostError[] = [];
  const governor = createGovernor({ tools: { get_note: { effect: "read_only" } } });
  const governed = governClient(client, {
    governor,
    server: "sse",
    onTransportError: (error) => reports.push(error),
  });
  const run = governor.startRun();
  const controller = new AbortController();
  const pending = governed.callTool(run, {
    name: "get_note",
    arguments: { id: "a" },
    signal: controller.signal,
  });
  // Cancelled once the server holds the call's stream.
  await expect.poll(() => sse.holding()).toBe(true);
  controller.abort();
  const outcome = await pending;
  expect(outcome.kind).toBe("stop");
  expect(JSON.stringify(toModelResult(outcome))).not.toContain(SECRET);
  await expect.poll(() => sse.wasCancelled()).toBe(true);
  // The garbage and the late answer arrive; the next call (a new run: this one ended with the
  // abort) is answered on the same client.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const next = await governed.callTool(governor.startRun(), {
    name: "get_note",
    arguments: { id: "b" },
  });
  expect(toModelResult(next)).toEqual({ content: [{ type: "text", text: "done 2" }] });
  // Both reached the host, as reports: the event that is not JSON, then the late answer by its id.
  await expect.poll(() => reports.length).toBe(2);
  expect(reports.map((r) => r.message)).toEqual([
    expect.stringContaining("JSON"),
    expect.stringContaining("An answer to request 1 arrived after the request ended"),
  ]);
  for (const report of reports) {
    expect(`${report.message} ${String(report.cause ?? "")}`).not.toContain(SECRET);
  }
}, 30_000);
