import { getEventListeners } from "node:events";
import { createGovernor, type PolicyInput } from "@governor/core";
import { connectInMemory, createFaultServer } from "@governor/testkit";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, describe, expect, it } from "vitest";
import { governClient } from "./client.ts";

/**
 * Each pass on the wire gets a PlainAbortSignal the run aborts through `ctx.onAbort`, not an
 * AbortSignal: whatever cuts the attempt (the run's signal, its deadline, its end, the call's own
 * signal) cancels the request on the wire, and nothing cancels a request that already finished.
 */

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function setup(policy: PolicyInput = { tools: { slow: { effect: "read_only" } } }) {
  const { client, clientTransport } = await connectInMemory(createFaultServer());
  clients.push(client);
  const governor = createGovernor(
    { ...policy, defaults: { retry: { attempts: 1 } } },
    { metrics: false, onHostError: () => undefined },
  );
  const governed = governClient(client, { governor, server: "notes" });
  return { client, governor, governed, sent: tapMethods(clientTransport) };
}

/** The methods of the messages the client sends. */
function tapMethods(transport: InMemoryTransport): string[] {
  const sent: string[] = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if ("method" in message) sent.push(message.method);
    return send(message, options);
  };
  return sent;
}

const cancelled = (sent: string[]) => sent.filter((m) => m === "notifications/cancelled").length;

describe("a call in flight is cancelled on the wire by whatever cuts its attempt", () => {
  it("the run's deadline", async () => {
    const { governor, governed, sent } = await setup();
    // Far enough for the request to leave on a loaded machine (cut before it, nothing is sent).
    const run = governor.startRun({ deadline: Date.now() + 400 });
    const outcome = await governed.callTool(run, { name: "slow", arguments: { ms: 5000 } });
    expect(outcome.kind).toBe("stop");
    expect(sent.filter((m) => m === "tools/call")).toHaveLength(1);
    expect(cancelled(sent)).toBe(1);
  });

  it("the host's run.end()", async () => {
    const { governor, governed, sent } = await setup();
    const run = governor.startRun();
    setTimeout(() => run.end(), 30);
    const outcome = await governed.callTool(run, { name: "slow", arguments: { ms: 5000 } });
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(cancelled(sent)).toBe(1);
  });

  it("the call's own signal", async () => {
    const { governor, governed, sent } = await setup();
    const own = new AbortController();
    setTimeout(() => own.abort(), 30);
    const outcome = await governed.callTool(governor.startRun(), {
      name: "slow",
      arguments: { ms: 5000 },
      signal: own.signal,
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(cancelled(sent)).toBe(1);
    expect(getEventListeners(own.signal, "abort")).toHaveLength(0);
  });
});

describe("a finished call is never cancelled, and holds nothing", () => {
  it("not by the run's end, its deadline or the call's signal after it finished", async () => {
    const { governor, governed, sent } = await setup({
      tools: { search_notes: { effect: "read_only" } },
    });
    const own = new AbortController();
    // Far enough for three in-memory calls on a loaded machine: they must finish before it.
    const deadline = Date.now() + 1000;
    const run = governor.startRun({ deadline });
    for (let i = 0; i < 3; i++) {
      const outcome = await governed.callTool(run, {
        name: "search_notes",
        arguments: { query: `q${i}` },
        signal: own.signal,
      });
      expect(outcome.kind).toBe("ok");
    }
    expect(getEventListeners(own.signal, "abort")).toHaveLength(0);
    own.abort();
    await new Promise((r) => setTimeout(r, deadline + 20 - Date.now()));
    run.end();
    expect(cancelled(sent)).toBe(0);
  });

  it("the success path makes no AbortController beyond what the raw SDK call makes (on Node 20 one costs ~5 µs)", async () => {
    const { client, governor, governed } = await setup({
      tools: { search_notes: { effect: "read_only" } },
    });
    const count = async (calls: () => Promise<unknown>): Promise<number> => {
      let made = 0;
      const Original = globalThis.AbortController;
      globalThis.AbortController = class extends Original {
        constructor() {
          super();
          made++;
        }
      };
      try {
        await calls();
      } finally {
        globalThis.AbortController = Original;
      }
      return made;
    };
    // The in-memory server runs in this process: it makes one per request it handles.
    const raw = await count(async () => {
      for (let i = 0; i < 10; i++) {
        await client.callTool({ name: "search_notes", arguments: { query: `q${i}` } });
      }
    });
    const run = governor.startRun();
    const ours = await count(async () => {
      for (let i = 0; i < 10; i++) {
        const outcome = await governed.callTool(run, {
          name: "search_notes",
          arguments: { query: `q${i}` },
        });
        expect(outcome.kind).toBe("ok");
      }
    });
    expect(raw).toBeGreaterThan(0);
    expect(ours).toBe(raw);
  });
});
