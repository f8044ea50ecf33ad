/**
 * attack25: the run's deadline passes while an attempt waits before it sends (a reconnect,
 * `ctx.beforeSending`), and the wait ends before the guard's deadline timer has had its turn (the
 * event loop was busy: a reconnect spawns a process synchronously, an agent does CPU work). The
 * attempt was sent after the deadline: the server ran the write, and the call then stopped as a
 * write that may have happened, where nothing should have been sent at all. Over the real MCP SDK
 * and stdio, the fault server's effects log telling what ran.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, createMemoryStore } from "@governor/core";
import { governClient } from "@governor/mcp";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, describe, expect, it } from "vitest";
import { forwardingStore } from "./support/store-doubles.ts";

const dir = mkdtempSync(join(tmpdir(), "atk25-deadline-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Holds the event loop until `until` (epoch ms): a synchronous stretch of work. */
function busyUntil(until: number): void {
  while (Date.now() < until) {
    // busy
  }
}

describe("a wait before sending that outlasts the run's deadline", () => {
  it("a write waiting for a reconnect is not sent once the deadline passed", async () => {
    const effects = join(dir, "effects.jsonl");
    const params = stdioServerParams({ effectsFile: effects });
    const governor = createGovernor(
      { servers: { notes: { tools: { create_note: { effect: "mutating" } } } } },
      { metrics: false },
    );
    const client = new Client({ name: "atk25", version: "0.0.0" });
    await client.connect(new StdioClientTransport(params));
    // The server went away: the next call reconnects first.
    await client.close();
    const deadline = Date.now() + 400;
    const governed = governClient(client, {
      governor,
      server: "notes",
      reconnect: async () => {
        await client.connect(new StdioClientTransport(params));
        // The connection is back; the loop stays busy until past the run's deadline.
        busyUntil(Math.max(Date.now(), deadline) + 30);
      },
    });
    const run = governor.startRun({ deadline });
    try {
      const outcome = await governed.callTool(run, {
        name: "create_note",
        arguments: { title: "t", body: "b" },
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Nothing had been sent when the deadline passed: nothing is sent, nothing is in doubt.
      expect(readEffects(effects)).toEqual([]);
      expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
      expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it("a call whose store answer comes after the deadline, before any timer ran, is not sent", async () => {
    const memory = createMemoryStore();
    let deadline = 0;
    // A remote store's answer: it comes in from I/O, after a stretch of synchronous work took the
    // event loop past the run's deadline (the store's own timeout is a timer, not run yet).
    const store = forwardingStore(
      {
        increment: (key, by, ttlMs) =>
          new Promise((resolve) =>
            setImmediate(() => {
              busyUntil(deadline + 30);
              resolve(memory.increment(key, by, ttlMs));
            }),
          ),
      },
      memory,
    );
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating" }, look: { effect: "read_only" } } },
      { metrics: false, store },
    );
    for (const tool of ["look", "pay"]) {
      deadline = Date.now() + 50;
      const run = governor.startRun({ deadline });
      let sent = 0;
      const outcome = await run.call({ tool, args: { n: 1 } }, async () => {
        sent += 1;
        return { content: [{ type: "text", text: "done" }] };
      });
      expect(sent).toBe(0);
      expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
    }
  });
});
