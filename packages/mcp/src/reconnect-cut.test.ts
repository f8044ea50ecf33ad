import { createGovernor, createMemoryStore } from "@governor/core";
import { connectInMemory, createFaultServer } from "@governor/testkit";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { forwardingStore } from "../../../test/support/store-doubles.ts";
import { governClient } from "./client.ts";

/**
 * Issue 26.6: an attempt cut while it waits for a reconnect never left. It was settled
 * `uncertain` (a write that may have happened, refusing its identical writes until a person
 * settled it), although nothing was sent.
 */

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function setup(wallTimeMs?: number) {
  const { client } = await connectInMemory(createFaultServer());
  clients.push(client);
  const memory = createMemoryStore();
  const settled: [string, string][] = [];
  const store = forwardingStore(
    {
      settle: (k, st, o) => {
        if (k.startsWith("gk_")) settled.push([k, st]);
        memory.settle(k, st, o);
      },
    },
    memory,
  );
  const governor = createGovernor(
    {
      tools: { create_note: { effect: "mutating" }, get_note: { effect: "read_only" } },
      ...(wallTimeMs !== undefined && { budgets: { wallTimeMs } }),
    },
    { metrics: false, store },
  );
  let reconnects = 0;
  const governed = governClient(client, {
    governor,
    // A reconnect that does not finish until the whole reconnect's time is up.
    reconnect: (signal) => {
      reconnects += 1;
      return new Promise((_resolve, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    },
    reconnectTimeoutMs: 60_000,
  });
  // The connection is gone: the next call waits for a reconnect before it sends anything.
  await client.close();
  return { governor, governed, settled, reconnects: () => reconnects };
}

const create = { name: "create_note", arguments: { title: "t", body: "b" } };

describe("issue 26.6: a write cut while it waits for a reconnect", () => {
  it("an abort settles its key as not sent (was uncertain), and later calls of the run fail at once", async () => {
    const { governor, governed, settled, reconnects } = await setup();
    const ac = new AbortController();
    const run = governor.startRun({ signal: ac.signal });
    const pending = governed.callTool(run, create);
    await expect.poll(reconnects).toBe(1);
    ac.abort();
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeUndefined();
    expect(settled.map(([, st]) => st)).toEqual(["failed"]);
    const later = await governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
    expect(later).toMatchObject({ kind: "stop", reason: "aborted" });
  });

  it("the run's deadline does the same: a stop deadline_exceeded, not uncertain_mutation", async () => {
    const { governor, governed, settled } = await setup(200);
    const run = governor.startRun();
    const outcome = await governed.callTool(run, create);
    expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeUndefined();
    expect(settled.map(([, st]) => st)).toEqual(["failed"]);
    expect(run.ended).toBe(true);
    const later = await governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
    expect(later).toMatchObject({ kind: "stop" });
  });
});
