/**
 * A review of attack25's gate (`stillSendable`) found two more ways past it, each failing before
 * its fix: a host's store that answers at once but took time (SQLite waiting on another
 * connection's lock) let a write out after the deadline, since only a step that returned a
 * promise made the gate read the clock again; and a call in its approval turn ended by a parallel
 * call's stop, or by the deadline, was refused as `not_approved` (a refusal nobody gave, which
 * also became the run's reason at the deadline) instead of ending as the run did.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { createGovernor, createMemoryStore } from "@governor/core";
import { createSqliteStore } from "@governor/sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { forwardingStore } from "./support/store-doubles.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-attack25-review-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ok = { content: [{ type: "text", text: "done" }] };

/** Keeps the thread busy until `until` (epoch ms): a store's own code that took that long. */
function busyUntil(until: number): void {
  while (Date.now() < until) {
    // the store's work
  }
}

describe("a store that answers at once but took time", () => {
  it("a claim answered past the deadline by a host's synchronous store sends nothing", async () => {
    const memory = createMemoryStore();
    let deadline = 0;
    const store = forwardingStore(
      {
        claim: (key, argsHash, options) => {
          busyUntil(deadline + 30);
          return memory.claim(key, argsHash, options);
        },
      },
      memory,
    );
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating" } } },
      { metrics: false, store },
    );
    deadline = Date.now() + 50;
    const run = governor.startRun({ deadline });
    let sent = 0;
    const outcome = await run.call({ tool: "pay", args: { n: 1 } }, async () => {
      sent += 1;
      return ok;
    });
    expect(sent).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
  });

  it("a claim on SQLite that waited past the deadline for another connection's lock sends nothing", async () => {
    const path = join(dir, "ledger.db");
    const store = createSqliteStore({ path, busyTimeoutMs: 2_000 });
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating" } } },
      { metrics: false, store },
    );
    // Another connection (a worker thread) holds the write lock for 300 ms.
    const worker = new Worker(
      `const { DatabaseSync } = require("node:sqlite");
       const { parentPort } = require("node:worker_threads");
       const db = new DatabaseSync(${JSON.stringify(path)});
       db.exec("PRAGMA busy_timeout = 2000");
       db.exec("BEGIN IMMEDIATE");
       parentPort.postMessage("locked");
       const until = Date.now() + 300; while (Date.now() < until) {}
       db.exec("COMMIT"); db.close(); parentPort.postMessage("done");`,
      { eval: true },
    );
    try {
      await new Promise((resolve) => worker.once("message", resolve));
      const run = governor.startRun({ deadline: Date.now() + 100 });
      let sent = 0;
      const outcome = await run.call({ tool: "pay", args: { n: 2 } }, async () => {
        sent += 1;
        return ok;
      });
      expect(sent).toBe(0);
      // Settled as not sent: no key left in doubt for a write never made.
      expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
      expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeFalsy();
    } finally {
      await worker.terminate();
      store.close?.();
    }
  });
});

describe("a call in its approval turn when the run ends", () => {
  it("ends with the run's reason when a parallel call's stop ended it", async () => {
    let approve: (v: boolean) => void = () => undefined;
    const governor = createGovernor(
      {
        budgets: { calls: 1 },
        tools: { pay: { effect: "mutating", access: "confirm" }, look: { effect: "read_only" } },
      },
      {
        metrics: false,
        onConfirm: () =>
          new Promise<boolean>((resolve) => {
            approve = resolve;
          }),
      },
    );
    const run = governor.startRun();
    let sent = 0;
    const pay = run.call({ tool: "pay", args: { n: 1 } }, async () => {
      sent += 1;
      return ok;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The approval is pending (it comes before the budget): two reads spend and then exceed it.
    expect((await run.call({ tool: "look", args: {} }, async () => ok)).kind).toBe("ok");
    const refused = await run.call({ tool: "look", args: { x: 1 } }, async () => ok);
    expect(refused).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    approve(false);
    const outcome = await pay;
    expect(sent).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.summary().reason).toBe("budget_exhausted");
  });

  it("ends as a call past the deadline does when the deadline ended the turn", async () => {
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating", access: "confirm" } } },
      { metrics: false, onConfirm: () => new Promise<boolean>(() => undefined) },
    );
    // 200 ms: the call reaches its approval before the deadline on a loaded machine (50 ms was
    // overrun once in CI).
    const run = governor.startRun({ deadline: Date.now() + 200 });
    let sent = 0;
    const outcome = await run.call({ tool: "pay", args: { n: 1 } }, async () => {
      sent += 1;
      return ok;
    });
    expect(sent).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.summary()).toMatchObject({ reason: "budget_exhausted", budget: "wallTime" });
  });
});
