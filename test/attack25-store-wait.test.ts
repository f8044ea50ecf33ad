/**
 * attack25: a first attempt admitted before its run stopped, still waiting on the store (the
 * server's retry-budget count, a claim) when a stop Governor decided ends the run, was sent to the
 * tool once the store answered: a request sent after the run had stopped. The same hole
 * 2a96ec3 closed for a reconnect wait (`ctx.beforeSending`), here for the store's waits between
 * admission and send, over a real Redis ledger and the real MCP SDK over Streamable HTTP.
 */
import { createGovernor } from "@governor/core";
import { governClient } from "@governor/mcp";
import { createRedisStore, type RedisStore } from "@governor/redis";
import { type HttpFaultServer, startHttpServer } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";

const url = process.env.REDIS_URL;

describe.skipIf(!url)("a call waiting on the store when its run stops", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });

  async function setup(policyTools: Record<string, unknown>) {
    const http: HttpFaultServer = await startHttpServer({ jsonResponse: true });
    cleanup.push(() => http.close());
    const store: RedisStore = createRedisStore({
      url: url as string,
      prefix: `atk25:${Math.random().toString(36).slice(2)}:`,
    });
    cleanup.push(() => store.close());
    const governor = createGovernor(
      { budgets: { calls: 1 }, servers: { notes: { tools: policyTools as never } } },
      { metrics: false, store },
    );
    const client = new Client({ name: "atk25", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    cleanup.push(() => client.close());
    const governed = governClient(client, { governor, server: "notes" });
    const sentCalls = () => http.requests().filter((r) => r.method === "tools/call");
    return { governor, governed, sentCalls };
  }

  it("a read admitted before a parallel call's stop is not sent after the stop", async () => {
    const { governor, governed, sentCalls } = await setup({ get_note: { effect: "read_only" } });
    const run = governor.startRun();
    // Both start in one turn: the read takes the one call of the budget and then waits on Redis
    // (its first attempt's count); the second call is refused on the budget and stops the run.
    const read = governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
    const second = governed.callTool(run, { name: "get_note", arguments: { id: "other" } });
    const stopped = await second;
    expect(stopped).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.ended).toBe(true);
    const outcome = await read;
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Nothing had been sent when the run stopped: nothing is sent after it.
    expect(sentCalls()).toEqual([]);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
  });
});
