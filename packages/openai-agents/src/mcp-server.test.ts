import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";
import { governMcpServer } from "./mcp-server.ts";

/**
 * A stand-in for an Agents SDK MCP server whose connection is gone until `connect()` runs again:
 * what an `MCPServerStdio` does once its process died (its client answers `Not connected`).
 */
function goneServer() {
  const state = { connected: false, connects: 0, closes: 0, sent: [] as string[] };
  const server = {
    name: "notes",
    cacheToolsList: false,
    async connect() {
      state.connects += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      state.connected = true;
    },
    async close() {
      state.closes += 1;
      state.connected = false;
    },
    async invalidateToolsCache() {},
    async listTools() {
      if (!state.connected) throw new Error("Not connected");
      return [{ name: "get_note", inputSchema: { type: "object" as const, properties: {} } }];
    },
    async callTool(name: string, args: Record<string, unknown> | null) {
      if (!state.connected) throw new Error("Not connected");
      state.sent.push(`${name}:${JSON.stringify(args)}`);
      return [{ type: "text" as const, text: "ok" }];
    },
  };
  return { server, state };
}

describe("governMcpServer reconnect", () => {
  it("the wrappers of two runs share one reconnect of their server: connect() runs once", async () => {
    const { server, state } = goneServer();
    const governor = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    );
    const wrappers = [governor.startRun(), governor.startRun()].map((run) =>
      governMcpServer(server as never, { governor, run, reconnect: true }),
    );
    const answers = await Promise.all(
      wrappers.flatMap((w) => [
        w.callTool("get_note", { id: "a" }),
        w.callTool("get_note", { id: "b" }),
      ]),
    );
    expect(answers.map((a) => a[0])).toEqual(Array(4).fill({ type: "text", text: "ok" }));
    expect(state.connects).toBe(1);
    expect(state.closes).toBe(1);
    expect(state.sent).toHaveLength(4);
  });

  it("a tool listing that finds the server gone reconnects too; without reconnect it throws", async () => {
    const { server, state } = goneServer();
    const governor = createGovernor({}, { metrics: false });
    const plain = governMcpServer(server as never, { governor, run: governor.startRun() });
    await expect(plain.listTools()).rejects.toThrow(/Not connected/);
    const governed = governMcpServer(server as never, {
      governor,
      run: governor.startRun(),
      reconnect: true,
    });
    expect((await governed.listTools()).map((t) => t.name)).toEqual(["get_note"]);
    expect(state.connects).toBe(1);
  });

  it("a reconnect of your own that fails ends the call for the host as session_expired, redacted", async () => {
    const { server } = goneServer();
    const governor = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    );
    const run = governor.startRun();
    const wrapper = governMcpServer(server as never, {
      governor,
      run,
      reconnect: async () => {
        throw new Error("spawn failed: token ghp_16C7e42F292c6912E7710c838347Ae178B4a");
      },
    });
    const error = await wrapper.callTool("get_note", { id: "a" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "HostError", reason: "session_expired" });
    expect(String((error as Error).message)).toMatch(/Reconnect failed: spawn failed/);
    expect(String((error as Error).message)).not.toContain("ghp_16C7e42F");
    expect(run.summary().reason).toBe("session_expired");
  });
});

describe("governMcpServer identical calls", () => {
  /** A server whose one tool, charge, answers as `charge` does with the arguments it was sent. */
  function billingServer(
    charge: (args: Record<string, unknown>) => Promise<{ type: "text"; text: string }[]>,
  ) {
    return {
      name: "billing",
      cacheToolsList: false,
      async connect() {},
      async close() {},
      async invalidateToolsCache() {},
      async listTools() {
        return [{ name: "charge", inputSchema: { type: "object" as const, properties: {} } }];
      },
      async callTool(_name: string, args: Record<string, unknown>) {
        return charge(args);
      },
    };
  }

  /** A server whose get_note answers only when the test lets it; counts what it was sent. */
  function heldServer() {
    const state = { sent: 0, release: (): void => undefined };
    const held = new Promise<void>((resolve) => {
      state.release = resolve;
    });
    const server = {
      name: "notes",
      cacheToolsList: false,
      async connect() {},
      async close() {},
      async invalidateToolsCache() {},
      async listTools() {
        return [{ name: "get_note", inputSchema: { type: "object" as const, properties: {} } }];
      },
      async callTool() {
        state.sent += 1;
        await held;
        return [{ type: "text" as const, text: "ok" }];
      },
    };
    return { server, state };
  }

  it("a call waiting behind an identical one ends at its own abort, unsent; the stop it makes cuts the first read", async () => {
    const { server, state } = heldServer();
    const governor = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    );
    const wrapper = governMcpServer(server as never, { governor, run: governor.startRun() });
    const first = wrapper.callTool("get_note", { id: "a" });
    const abort = new AbortController();
    const second = wrapper
      .callTool("get_note", { id: "a" }, undefined, { signal: abort.signal } as never)
      .then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
    await new Promise((resolve) => setTimeout(resolve, 10));
    abort.abort(new Error("host gave up"));
    const settled = await Promise.race([
      second,
      new Promise((resolve) => setTimeout(() => resolve("still waiting"), 500)),
    ]);
    expect(settled).toMatchObject({ error: { name: "GovernorStopError", reason: "aborted" } });
    expect(state.sent).toBe(1);
    // The abort ended the run: the first call, a read still held by the server, is cut at once
    // (what it brings back changes nothing now), and nothing more is sent.
    await expect(first).rejects.toMatchObject({ name: "GovernorStopError", reason: "aborted" });
    state.release();
    expect(state.sent).toBe(1);
  });

  it("two writes that differ only in the key argument the model filled in wait for each other, as identical ones do", async () => {
    // Governor writes that argument itself, so on the wire they are one call twice: run side by
    // side, the second met the first in progress and the model was told to wait for it (a turn
    // spent) where the same two calls with one key are made one after the other.
    const sent: Record<string, unknown>[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server = billingServer(async (args) => {
      sent.push(args);
      if (sent.length === 1) await held;
      return [{ type: "text" as const, text: `charge ${sent.length} made` }];
    });
    const governor = createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { argument: "idempotency_key", honorsKeys: true },
          },
        },
      },
      { metrics: false },
    );
    const scope = { idempotencyScope: "conversation-1" };
    const wrapper = governMcpServer(server as never, { governor, run: governor.startRun(scope) });
    const calls = ["model-made-1", "model-made-2"].map((key) =>
      wrapper.callTool("charge", { amount: 5, idempotency_key: key }),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(sent).toHaveLength(1);
    release();
    expect(await Promise.all(calls)).toEqual([
      [{ type: "text", text: "charge 1 made" }],
      [{ type: "text", text: "charge 2 made" }],
    ]);
    // Each went out with a key of Governor's own, one per logical call, never the model's.
    expect(sent.map((s) => s.idempotency_key)).toEqual([
      expect.stringMatching(/^gk_/),
      expect.stringMatching(/^gk_/),
    ]);
    expect(sent[0]?.idempotency_key).not.toBe(sent[1]?.idempotency_key);
  });

  it("a write left in doubt, then the same write with another key the model made: not sent", async () => {
    // Waiting behind the first does not mean being sent after it: the write may have happened.
    const sent: Record<string, unknown>[] = [];
    const server = billingServer(async (args) => {
      sent.push(args);
      await new Promise((resolve) => setTimeout(resolve, 10));
      throw new Error("socket hang up");
    });
    const governor = createGovernor(
      { tools: { charge: { effect: "mutating", idempotency: { argument: "idempotency_key" } } } },
      { metrics: false },
    );
    const scope = { idempotencyScope: "conversation-1" };
    const wrapper = governMcpServer(server as never, { governor, run: governor.startRun(scope) });
    const calls = ["model-made-1", "model-made-2"].map((key) =>
      wrapper.callTool("charge", { amount: 5, idempotency_key: key }).then(
        () => "answered",
        (error: { name?: string; reason?: string; idempotencyKey?: string }) =>
          `${error.name}:${error.reason}:${error.idempotencyKey}`,
      ),
    );
    const [first, second] = await Promise.all(calls);
    // The first ends run() for the host with the key a person must settle; the second, which
    // waited behind it, finds the run ended and is not sent.
    expect(first).toBe(`HostError:transport_error:${String(sent[0]?.idempotency_key)}`);
    expect(second).toMatch(/^GovernorStopError:/);
    expect(sent).toHaveLength(1);
    // The next run of the conversation, the same write with a third key: the index of writes in
    // doubt refuses it, as the same write with the first key.
    const next = governMcpServer(server as never, { governor, run: governor.startRun(scope) });
    await expect(
      next.callTool("charge", { amount: 5, idempotency_key: "model-made-3" }),
    ).rejects.toMatchObject({ name: "GovernorStopError", reason: "uncertain_mutation" });
    expect(sent).toHaveLength(1);
  });
});
