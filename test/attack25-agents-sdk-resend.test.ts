/**
 * attack25: the Agents SDK's MCPServerStreamableHttp reconnects and sends a tool call once more by
 * itself when its client lost its transport (`reconnect-and-retry`, inside one Governor attempt),
 * without `ctx.beforeSending`: its first try found no transport (nothing sent), it reconnects (an
 * initialize round trip), and its second try reaches the server. Only Governor's own reconnect
 * (governMcpServer's `reconnect`) goes through `beforeSending`; the SDK's happens inside the
 * executor, out of its sight.
 *
 * A read: fixed. A stop Governor decides cuts the reads in flight (their signal aborts), and the
 * SDK checks the signal before its second try. A write: still sent after the stop (pinned
 * `it.fails`). A write's attempt is not cut at a stop (cutting one already on the wire would leave
 * its outcome in doubt), and nothing the SDK shows says whether its first try went out. It is not
 * a duplicate (the first try sent nothing, and the attempt's outcome is still recorded), but it
 * goes out after the run ended. Closing it needs the SDK to say so (a hook before each send), or
 * the adapter reading the SDK's internals (its client's detached transport).
 */
import { createGovernor } from "@governor/core";
import { governMcpServer } from "@governor/openai-agents";
import { type HttpFaultServer, startHttpServer } from "@governor/testkit";
import { MCPServerStreamableHttp } from "@openai/agents";
import { afterEach, describe, expect, it } from "vitest";

describe("the Agents SDK's own resend after a reconnect", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });

  it("a read is not sent after a parallel call's stop ended the run", async () => {
    const http: HttpFaultServer = await startHttpServer({ jsonResponse: true });
    cleanup.push(() => http.close());
    const server = new MCPServerStreamableHttp({ url: http.url, name: "notes" });
    await server.connect();
    cleanup.push(() => server.close());
    const governor = createGovernor(
      {
        budgets: { calls: 1 },
        servers: { notes: { tools: { get_note: { effect: "read_only" } } } },
      },
      { metrics: false },
    );
    const run = governor.startRun();
    const governed = governMcpServer(server, { governor, run, server: "notes" } as never);
    // The client's transport goes away (the SDK detaches it): its next call reconnects itself.
    const session = (
      server as unknown as { underlying: { session: { transport?: { close(): Promise<void> } } } }
    ).underlying.session;
    await session.transport?.close();
    const sent = () => http.requests().filter((r) => r.method === "tools/call");
    const read = governed.callTool("get_note", { id: "welcome" });
    const second = governed.callTool("get_note", { id: "other" }).catch((e: unknown) => e);
    expect(String(await second)).toContain("budget_exhausted");
    expect(run.ended).toBe(true);
    // The stop cut the read's attempt: the SDK sees its signal aborted and does not resend.
    await read.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent()).toEqual([]);
  });

  it.fails("a write is not sent after a parallel call's stop ended the run (not fixed)", async () => {
    const http: HttpFaultServer = await startHttpServer({ jsonResponse: true });
    cleanup.push(() => http.close());
    const server = new MCPServerStreamableHttp({ url: http.url, name: "notes" });
    await server.connect();
    cleanup.push(() => server.close());
    const governor = createGovernor(
      {
        budgets: { calls: 1 },
        servers: {
          notes: {
            tools: { get_note: { effect: "read_only" }, append_log: { effect: "mutating" } },
          },
        },
      },
      { metrics: false },
    );
    const run = governor.startRun();
    const governed = governMcpServer(server, { governor, run, server: "notes" } as never);
    // The client's transport goes away (the SDK detaches it): its next call reconnects itself.
    const session = (
      server as unknown as { underlying: { session: { transport?: { close(): Promise<void> } } } }
    ).underlying.session;
    await session.transport?.close();
    const sent = () => http.requests().filter((r) => r.method === "tools/call");
    const read = governed.callTool("append_log", { line: "welcome" });
    const second = governed.callTool("get_note", { id: "other" }).catch((e: unknown) => e);
    expect(String(await second)).toContain("budget_exhausted");
    expect(run.ended).toBe(true);
    // Sent by the SDK after the stop, and answered: the model even reads its result.
    await read.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent()).toEqual([]);
  });
});
