import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ClaimOptions,
  createGovernor,
  createMemoryStore,
  type Run,
  type Store,
} from "@governor/core";
import { type GovernedClient, governClient } from "@governor/mcp";
import { connectInMemory, createFaultServer, readEffects } from "@governor/testkit";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { forwardingStore } from "../../../../test/support/store-doubles.ts";
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

  it("a retry that would switch tools, refused by the switches budget, pauses every tool and names the budget", async () => {
    const clock = { now: Date.now() };
    const flaky = { effect: "read_only", retry: { attempts: 2 }, alternatives: ["search_notes"] };
    const { session, logs } = await sessionWith(
      { budgets: { switches: 0 }, tools: { flaky_fetch: flaky } },
      clock,
    );
    const spent = await session.callTool({
      name: "flaky_fetch",
      arguments: { url: "https://example.com" },
    });
    expect(spent.isError).toBe(true);
    expect(JSON.stringify(spent.content)).toMatch(/switches budget is spent/);
    expect(logs.at(-1)?.data).toMatchObject({
      event: "stopped",
      reason: "budget_exhausted",
      budget: "switches",
      scope: "window",
    });
    const paused = await session.callTool({ name: "search_notes", arguments: { query: "x" } });
    expect(JSON.stringify(paused.content)).toMatch(/paused until the current budget window ends/);
  });

  it("a call still out when the next window starts keeps its run until it is answered (it was cut: aborted)", async () => {
    const clock = { now: Date.now() };
    const { session, logs } = await sessionWith(
      { tools: { slow: { effect: "read_only" } }, budgets: { calls: 10 } },
      clock,
    );
    const long = session.callTool({ name: "slow", arguments: { ms: 150 } });
    await new Promise((resolve) => setTimeout(resolve, 30));
    clock.now += 60_000;
    // The next window's first call starts a fresh run; the call of the old one goes on.
    expect((await session.callTool(read)).isError).toBeFalsy();
    const answered = await long;
    expect(answered.isError).toBeFalsy();
    expect(JSON.stringify(answered.content)).toContain("Slept 150 ms");
    expect(logs).toEqual([]);
    session.close();
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

  it("a write answered with a JSON-RPC error after it went out is not sent again by a later run", async () => {
    // A low-level server sends what its handler threw as -32603, which may follow an effect.
    let commits = 0;
    const server = new Server({ name: "pay", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: "charge", inputSchema: { type: "object" } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => {
      commits += 1;
      throw Object.assign(new Error("Internal error"), { code: -32603 });
    });
    const { client } = await connectInMemory(server);
    closers.push(() => client.close());
    const governor = createGovernor(
      { tools: { charge: { effect: "mutating" } } },
      { metrics: false },
    );
    const logs: ProxyLog[] = [];
    const session = createProxySession({
      governor,
      governed: governClient(client, { governor }),
      log: (entry) => logs.push(entry),
    });
    const charge = { name: "charge", arguments: { amount: 5 } };
    // The host gets the JSON-RPC error; the person who checks gets the key in the log.
    await expect(session.callTool(charge)).rejects.toMatchObject({ code: -32603 });
    expect(logs[0]?.data).toMatchObject({
      event: "host_error",
      scope: "call",
      idempotencyKey: expect.stringMatching(/^gk_/),
    });
    // The model asks again: refused by the ledger, in every later run (it sent the charge again,
    // in a new run).
    const again = await session.callTool(charge);
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toMatch(
      /identical write sent earlier may have taken effect/,
    );
    expect(commits).toBe(1);
    // Another amount is another call.
    await expect(session.callTool({ name: "charge", arguments: { amount: 6 } })).rejects.toThrow();
    expect(commits).toBe(2);
  });

  it("a write the host cancelled after it went out is not sent again by a later run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "governor-proxy-session-"));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const effectsFile = join(dir, "effects.jsonl");
    const server = createFaultServer({
      effectsFile,
      scenario: { create_note: [{ kind: "hang_after_commit", ms: 10_000 }] },
    });
    const { client } = await connectInMemory(server);
    closers.push(() => client.close());
    const governor = createGovernor({}, { metrics: false });
    const logs: ProxyLog[] = [];
    const session = createProxySession({
      governor,
      governed: governClient(client, { governor }),
      log: (entry) => logs.push(entry),
    });
    const create = { name: "create_note", arguments: { title: "t", body: "b" } };
    const cancel = new AbortController();
    const first = session.callTool({ ...create, signal: cancel.signal });
    await expect.poll(() => readEffects(effectsFile).length).toBe(1);
    cancel.abort();
    await first;
    expect(logs.at(-1)?.data).toMatchObject({ reason: "aborted", scope: "call" });
    const again = await session.callTool(create);
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toMatch(
      /identical write sent earlier may have taken effect/,
    );
    expect(readEffects(effectsFile)).toHaveLength(1);
  });
});

describe("a call not made because another call's write ended the run", () => {
  it("is not remembered as a write that may have happened: the same call is sent in the next run", async () => {
    const memory = createMemoryStore();
    let claims = 0;
    // The second charge's claim answers after the first charge's lost answer stopped the run.
    const store: Store = {
      get: (k) => memory.get(k),
      set: (k, v, t) => memory.set(k, v, t),
      increment: (k, b, t) => memory.increment(k, b, t),
      claim: async (k: string, h: string, o: ClaimOptions) => {
        claims += 1;
        await new Promise((resolve) => setTimeout(resolve, claims === 2 ? 30 : 0));
        return memory.claim(k, h, o);
      },
      settle: (k, st, o) => memory.settle(k, st, o),
      entry: (k) => memory.entry(k),
      release: (owner) => memory.release(owner),
    };
    const governor = createGovernor(
      { tools: { charge: { effect: "mutating", retry: { attempts: 1 } } } },
      { metrics: false, store },
    );
    const charged: unknown[] = [];
    // The server as the run sees it: the first charge's connection drops, the others answer.
    const governed = {
      callTool: (run: Run, params: { name: string; arguments?: Record<string, unknown> }) =>
        run.call({ tool: params.name, args: params.arguments ?? {} }, async () => {
          charged.push(params.arguments?.amount);
          if (params.arguments?.amount === 1) {
            throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
          }
          return { content: [{ type: "text" as const, text: "charged" }] };
        }),
    } as unknown as GovernedClient;
    const session = createProxySession({ governor, governed });
    const doubt = session.callTool({ name: "charge", arguments: { amount: 1 } });
    const other = session.callTool({ name: "charge", arguments: { amount: 2 } });
    expect(JSON.stringify((await doubt).content)).toMatch(/may have happened/);
    const notMade = await other;
    expect(JSON.stringify(notMade.content)).toMatch(/the call was not made/);
    expect(charged).toEqual([1]);
    // Asked again, it is sent (a fresh run): it was never made. Was answered by the proxy itself
    // with "The earlier attempt may have made the change: do not send it again".
    const again = await session.callTool({ name: "charge", arguments: { amount: 2 } });
    expect(JSON.stringify(again.content)).not.toMatch(/may have/);
    expect(again.isError).toBeFalsy();
    expect(charged).toEqual([1, 2]);
    // The write in doubt stays blocked.
    const repeat = await session.callTool({ name: "charge", arguments: { amount: 1 } });
    expect(JSON.stringify(repeat.content)).toMatch(
      /identical write sent earlier may have taken effect/,
    );
    expect(charged).toEqual([1, 2]);
    session.close();
  });
});

describe("issue 26: a write in doubt behind the proxy is never sent again, whatever window or TTL", () => {
  async function hanging(clock?: { now: number }, timeoutMs?: number) {
    const dir = mkdtempSync(join(tmpdir(), "governor-proxy-doubt-"));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const effectsFile = join(dir, "effects.jsonl");
    const server = createFaultServer({
      effectsFile,
      scenario: { create_note: [{ kind: "hang_after_commit", ms: 2_000 }] },
    });
    const { client } = await connectInMemory(server);
    closers.push(() => client.close());
    const governor = createGovernor(
      {},
      { metrics: false, ...(clock !== undefined && { now: () => clock.now }) },
    );
    const logs: ProxyLog[] = [];
    const session = createProxySession({
      governor,
      governed: governClient(client, { governor }),
      windowMs: 60_000,
      stopTtlMs: 600_000,
      ...(timeoutMs !== undefined && { timeoutMs }),
      ...(clock !== undefined && { now: () => clock.now }),
      log: (entry) => logs.push(entry),
    });
    closers.push(async () => session.close());
    const create = { name: "create_note", arguments: { title: "t", body: "b" } };
    const effects = () => readEffects(effectsFile).length;
    return { session, create, effects, logs };
  }

  it("26 proxy 2: cancel, then the identical call in the same tick (one stdin write): not sent again", async () => {
    const { session, create, effects } = await hanging();
    const cancel = new AbortController();
    const first = session.callTool({ ...create, signal: cancel.signal });
    await expect.poll(effects).toBe(1);
    // The host's cancel and its retry, read from one write to stdin: no tick between them.
    cancel.abort();
    const again = session.callTool(create);
    await first;
    const refused = await again;
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/identical (?:call|write)/);
    expect(effects()).toBe(1);
  });

  it("26 proxy 3: the window rolls over while the write is unanswered: the identical call is refused", async () => {
    const clock = { now: Date.now() };
    const { session, create, effects } = await hanging(clock);
    const first = session.callTool(create);
    await expect.poll(effects).toBe(1);
    clock.now += 61_000;
    const again = await session.callTool(create);
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toMatch(/identical call is still in progress/);
    expect(effects()).toBe(1);
    await first;
  });

  it("26 proxy 4: --stop-ttl passes: the write in doubt is still refused (was sent under a new key)", async () => {
    const clock = { now: Date.now() };
    const { session, create, effects, logs } = await hanging(clock, 100);
    const lost = await session.callTool(create);
    expect(lost.isError).toBe(true);
    expect(logs.at(-1)?.data).toMatchObject({ reason: "uncertain_mutation", scope: "call" });
    expect(effects()).toBe(1);
    clock.now += 600_001;
    const again = await session.callTool(create);
    expect(again.isError).toBe(true);
    expect(JSON.stringify(again.content)).toMatch(
      /identical write sent earlier may have taken effect/,
    );
    expect(effects()).toBe(1);
  });
});

describe("a call the host cancelled while its answer was being recorded", () => {
  /**
   * A session over a fault server whose write effects are counted, and a store whose settle of a
   * succeeded write is where the host's cancel comes (a store's round trip).
   */
  async function cancelledWhileSettling(options: { stopTtlMs?: number; clock?: { now: number } }) {
    const dir = mkdtempSync(join(tmpdir(), "governor-proxy-session-"));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const effectsFile = join(dir, "effects.jsonl");
    const server = createFaultServer({ effectsFile });
    const { client } = await connectInMemory(server);
    closers.push(() => client.close());
    const cancel = new AbortController();
    const inner = createMemoryStore();
    const store = forwardingStore(
      {
        settle: async (key, state, settleOptions) => {
          if (state === "succeeded") cancel.abort();
          return await inner.settle(key, state, settleOptions);
        },
      },
      inner,
    );
    const clock = options.clock;
    const now = clock === undefined ? undefined : () => clock.now;
    const governor = createGovernor({}, { store, metrics: false, ...(now && { now }) });
    const logs: ProxyLog[] = [];
    const session = createProxySession({
      governor,
      governed: governClient(client, { governor }),
      log: (entry) => logs.push(entry),
      ...(options.stopTtlMs !== undefined && { stopTtlMs: options.stopTtlMs }),
      ...(now && { now }),
    });
    return { session, cancel, logs, effects: () => readEffects(effectsFile) };
  }

  const create = { name: "create_note", arguments: { title: "t", body: "b" } };

  it("is not made again: the next identical call gets its answer, once", async () => {
    const { session, cancel, logs, effects } = await cancelledWhileSettling({});
    const first = await session.callTool({ ...create, signal: cancel.signal });
    expect(cancel.signal.aborted).toBe(true);
    expect(first.isError).not.toBe(true);
    expect(logs.at(-1)?.data).toEqual({ event: "completed_after_cancel", tool: "create_note" });
    const again = await session.callTool(create);
    expect(again).toEqual(first);
    expect(logs.at(-1)?.data).toEqual({ event: "answered_after_cancel", tool: "create_note" });
    expect(effects()).toHaveLength(1);
    // Given once: a third identical call is a write of its own.
    await session.callTool(create);
    expect(effects()).toHaveLength(2);
  });

  it("keeps the answer for the stop TTL only", async () => {
    const clock = { now: Date.now() };
    const { session, cancel, effects } = await cancelledWhileSettling({ stopTtlMs: 60_000, clock });
    await session.callTool({ ...create, signal: cancel.signal });
    expect(cancel.signal.aborted).toBe(true);
    clock.now += 60_001;
    await session.callTool(create);
    expect(effects()).toHaveLength(2);
  });

  it("the identical call the host sends right after a cancel in the pause before the answer gets the answer, not a second write", async () => {
    const { session, logs, effects } = await cancelledWhileSettling({});
    const cancel = new AbortController();
    let again: Promise<unknown> | undefined;
    const first = await session.callTool({
      ...create,
      signal: cancel.signal,
      // The cancel comes in the pause before the answer, and the identical call right after it
      // (the pause is waited once, however often it is asked for, as the proxy's own).
      beforeAnswer: async () => {
        if (again !== undefined) return;
        cancel.abort();
        again = session.callTool(create);
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
    });
    expect(logs.map((entry) => entry.data.event)).toContain("completed_after_cancel");
    expect(await again).toEqual(first);
    expect(effects()).toHaveLength(1);
    // Given once: a third identical call is a write of its own.
    await session.callTool(create);
    expect(effects()).toHaveLength(2);
  });

  it("keeps no read: a read cancelled in the pause before its answer is read again", async () => {
    const { session, logs } = await sessionWith(
      { tools: { get_note: { effect: "read_only" } } },
      { now: Date.now() },
    );
    const cancel = new AbortController();
    // The cancel comes in the pause before the answer (after forwarded progress).
    await session.callTool({
      ...read,
      signal: cancel.signal,
      beforeAnswer: async () => cancel.abort(),
    });
    expect(cancel.signal.aborted).toBe(true);
    await session.callTool(read);
    expect(logs.map((entry) => entry.data.event)).not.toContain("completed_after_cancel");
    expect(logs.map((entry) => entry.data.event)).not.toContain("answered_after_cancel");
  });
});

describe("the stop memory and the key argument", () => {
  it("blocks the call a stop refused when the model fills the key argument anew (Governor writes it over)", async () => {
    const server = createFaultServer({
      scenario: { create_note: [{ kind: "error", text: "Server is running in read-only mode" }] },
    });
    const { client } = await connectInMemory(server);
    closers.push(() => client.close());
    const governor = createGovernor(
      {
        tools: {
          create_note: { effect: "mutating", idempotency: { argument: "idempotency_key" } },
        },
      },
      { metrics: false },
    );
    const logs: ProxyLog[] = [];
    const session = createProxySession({
      governor,
      governed: governClient(client, { governor }),
      windowMs: 60_000,
      stopTtlMs: 600_000,
      log: (entry) => logs.push(entry),
    });
    const note = (key: string) => ({
      name: "create_note",
      arguments: { title: "t", body: "b", idempotency_key: key },
    });
    expect((await session.callTool(note("k-1"))).isError).toBe(true);
    expect(logs.at(-1)?.data).toMatchObject({ event: "stopped", reason: "business_rule" });
    // The same call with another key the model made up: the same call on the wire, blocked here.
    const again = await session.callTool(note("k-2"));
    expect(again.isError).toBe(true);
    expect(logs.at(-1)?.data).toMatchObject({ event: "blocked", reason: "business_rule" });
    // Another title is another call: it reaches the server (whose script now answers it).
    const other = await session.callTool({
      name: "create_note",
      arguments: { title: "other", body: "b", idempotency_key: "k-3" },
    });
    expect(other.isError).toBeFalsy();
    expect(JSON.stringify(other.content)).toContain('Created note \\"other\\"');
    expect(logs).toHaveLength(2);
  });
});
