import { createGovernor } from "@governor/core";
import { governClient } from "@governor/mcp";
import { connectInMemory, createFaultServer } from "@governor/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createProxySession, type ProxyLog } from "./session.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function sessionWith(policy: object, clock: { now: number }) {
  const server = createFaultServer();
  const { client } = await connectInMemory(server);
  closers.push(() => client.close());
  const governor = createGovernor(
    { defaults: { retry: { baseDelayMs: 1, maxDelayMs: 2 } }, ...policy },
    { now: () => clock.now, metrics: false },
  );
  const logs: ProxyLog[] = [];
  const session = createProxySession({
    governor,
    governed: governClient(client, { governor }),
    windowMs: 60_000,
    stopTtlMs: 600_000,
    now: () => clock.now,
    log: (entry) => logs.push(entry),
  });
  return { session, logs };
}

const read = { name: "get_note", arguments: { id: "welcome" } };

describe("createProxySession", () => {
  it("pauses every tool when the window's budget is spent, until the window ends", async () => {
    const clock = { now: Date.now() };
    const { session, logs } = await sessionWith({ budgets: { calls: 2 } }, clock);
    expect((await session.callTool(read)).isError).toBeFalsy();
    expect((await session.callTool(read)).isError).toBeFalsy();
    const spent = await session.callTool(read);
    expect(spent.isError).toBe(true);
    expect(logs.at(-1)?.data).toMatchObject({ reason: "budget_exhausted", scope: "window" });
    const paused = await session.callTool({ name: "search_notes", arguments: { query: "x" } });
    expect(paused.isError).toBe(true);
    expect(JSON.stringify(paused.content)).toMatch(/paused until the current budget window ends/);
    clock.now += 60_000;
    // A new window: a fresh run with fresh budgets.
    expect((await session.callTool(read)).isError).toBeFalsy();
  });

  it("starts a fresh run per window, so budgets count within one window", async () => {
    const clock = { now: Date.now() };
    const { session } = await sessionWith({ budgets: { calls: 2 } }, clock);
    for (let window = 0; window < 3; window++) {
      expect((await session.callTool(read)).isError).toBeFalsy();
      expect((await session.callTool(read)).isError).toBeFalsy();
      clock.now += 60_001;
    }
  });
});
