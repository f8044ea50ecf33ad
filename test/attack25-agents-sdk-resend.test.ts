/**
 * attack25 (not fixed): the Agents SDK's MCPServerStreamableHttp reconnects and sends a tool call
 * once more by itself when its client lost its transport (`reconnect-and-retry`, inside one
 * Governor attempt), without `ctx.beforeSending`: a stop Governor decided while it reconnects (a
 * parallel call spending the calls budget) does not keep that send from going out: the SDK's
 * first try found no transport (nothing sent), it reconnects (an initialize round trip), the run
 * stops meanwhile, and the SDK's second try reaches the server. Only Governor's own reconnect
 * (governMcpServer's `reconnect`) goes through `beforeSending`; the SDK's happens inside the
 * executor, out of its sight, and a Governor stop does not abort an admitted attempt's signal.
 * Not fixed here: a fix must either abort the attempt's signal on a Governor stop while nothing
 * is on the wire, or have the adapter see the detached transport first and reconnect itself
 * through `beforeSending` (reading the SDK's internals).
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

  it.fails("is not sent after a parallel call's stop ended the run", async () => {
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
    // Sent by the SDK after the stop, and answered: the model even reads its result.
    await read.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent()).toEqual([]);
  });
});
