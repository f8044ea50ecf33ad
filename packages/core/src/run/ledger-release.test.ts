import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor, type GovernorOptions } from "./governor.ts";
import { laterClaims, memoryStoreWith, signalled } from "./store-doubles.support.ts";
import type { AttemptContext } from "./types.ts";

/**
 * A run's keys without `callId` are minted from its instance: once it ends nobody can claim them
 * again, so the memory store lets their settled entries go then (`Store.release`) instead of
 * keeping them 24 h against `maxLedgerEntries`. Writes in doubt, keys with a `callId`, and every
 * key while its run lives stay.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const gov = (options: GovernorOptions, budgets: { calls?: number } = {}) =>
  createGovernor(
    { tools: { pay: { effect: "mutating" }, look: { effect: "read_only" } }, budgets },
    { metrics: false, random: () => 0, ...options },
  );
/** The connection dropped mid-call: the write may have happened. */
const timeout = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

describe("a run's own keys leave the memory store's ledger when it ends", () => {
  it("60 runs of one write each under maxLedgerEntries: 50 all write (the 51st used to be ledger_full)", async () => {
    const store = createMemoryStore({ maxLedgerEntries: 50 });
    const host: unknown[] = [];
    const governor = gov({ store, onHostError: (e) => void host.push(e) });
    let payments = 0;
    for (let i = 0; i < 60; i++) {
      const run = governor.startRun();
      const outcome = await run.call({ tool: "pay", args: { amount: i } }, async () => {
        payments += 1;
        return ok("paid");
      });
      expect(outcome, `run ${i}`).toMatchObject({ kind: "ok", replayed: false });
      run.end();
    }
    expect(payments).toBe(60);
    expect(host).toEqual([]);
  });

  it("issue 26.5: runs that never end fill the cap with settled keys, which make room: the 51st run's write is made", async () => {
    const store = createMemoryStore({ maxLedgerEntries: 50 });
    const host: unknown[] = [];
    const governor = gov({ store, onHostError: (e) => void host.push(e) });
    let payments = 0;
    const keys: (string | undefined)[] = [];
    for (let i = 0; i < 51; i++) {
      await governor.startRun().call({ tool: "pay", args: { amount: i } }, async (ctx) => {
        keys.push(ctx.idempotencyKey);
        payments += 1;
        return ok("paid");
      });
    }
    expect(payments).toBe(51);
    expect(host).toEqual([]);
    // The oldest settled went first; the newest is kept.
    expect(store.entry(keys[0] as string)).toBeUndefined();
    expect(store.entry(keys[50] as string)?.state).toBe("succeeded");
  });

  it("keeps the run's entries while it lives: a parallel identical call replays the write", async () => {
    const memory = createMemoryStore();
    // The second call's claim arrives after the first call's write succeeded.
    const afterFirst = signalled();
    const governor = gov({ store: laterClaims(memory, [0, afterFirst.promise]) });
    const run = governor.startRun();
    const keys: (string | undefined)[] = [];
    let payments = 0;
    const pay = async (ctx: AttemptContext) => {
      keys.push(ctx.idempotencyKey);
      payments += 1;
      return ok("paid");
    };
    const firstCall = run.call({ tool: "pay", args: { amount: 5 } }, pay);
    void firstCall.then(afterFirst.resolve);
    const [first, second] = await Promise.all([
      firstCall,
      run.call({ tool: "pay", args: { amount: 5 } }, pay),
    ]);
    expect(first).toMatchObject({ kind: "ok", replayed: false });
    expect(second).toMatchObject({ kind: "ok", replayed: true });
    expect(payments).toBe(1);
    const key = keys[0] as string;
    expect(memory.entry(key)?.state).toBe("succeeded");
    run.end();
    expect(memory.entry(key)).toBeUndefined();
  });

  it("issue 26.5: a key with a callId but no scope is the run's own and leaves when it ends; one in a scope stays", async () => {
    const store = createMemoryStore();
    const governor = gov({ store });
    const keys: (string | undefined)[] = [];
    for (const scope of [undefined, "job-7"]) {
      const run = governor.startRun(scope === undefined ? {} : { idempotencyScope: scope });
      await run.call({ tool: "pay", args: { amount: 1 }, callId: "call_0" }, async (ctx) => {
        keys.push(ctx.idempotencyKey);
        return ok("paid");
      });
      run.end();
    }
    expect(keys).toHaveLength(2);
    expect(store.entry(keys[0] as string)).toBeUndefined();
    expect(store.entry(keys[1] as string)?.state).toBe("succeeded");
  });

  it("keeps a write in doubt after its run ends, under the key the stop reports", async () => {
    const store = createMemoryStore();
    const governor = gov({ store });
    const run = governor.startRun();
    const outcome = await run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      throw timeout();
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(run.ended).toBe(true);
    const key = outcome.kind === "stop" ? outcome.idempotencyKey : undefined;
    expect(key).toMatch(/./);
    expect(store.entry(key as string)?.state).toBe("uncertain");
    // A person settles it by hand: from then on it is an ordinary entry, kept for the retention.
    await governor.settle(key as string, "succeeded");
    expect(store.entry(key as string)?.state).toBe("succeeded");
  });

  it("keeps a write in flight when the run ends; its late settle neither throws nor is lost", async () => {
    const store = createMemoryStore();
    const governor = gov({ store });
    const run = governor.startRun();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inFlightKey: string | undefined;
    const slow = run.call({ tool: "pay", args: { amount: 1 } }, async (ctx) => {
      inFlightKey = ctx.idempotencyKey;
      await gate;
      return ok("paid");
    });
    let settledKey: string | undefined;
    await run.call({ tool: "pay", args: { amount: 2 } }, async (ctx) => {
      settledKey = ctx.idempotencyKey;
      return ok("paid");
    });
    // A parallel write whose answer was lost stops the run; the slow write was admitted and runs on.
    const doubt = await run.call({ tool: "pay", args: { amount: 3 } }, async () => {
      throw timeout();
    });
    expect(doubt).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(run.ended).toBe(true);
    expect(store.entry(settledKey as string)).toBeUndefined();
    expect(store.entry(inFlightKey as string)?.state).toBe("pending");
    release();
    expect(await slow).toMatchObject({ kind: "ok", replayed: false });
    // Settled after the end: kept (for the retention), not dropped, not lost.
    expect(store.entry(inFlightKey as string)?.state).toBe("succeeded");
    const key = doubt.kind === "stop" ? doubt.idempotencyKey : undefined;
    expect(store.entry(key as string)?.state).toBe("uncertain");
  });

  it("a write whose claim answers after its run ended is not sent (an identical one's entry may be gone)", async () => {
    const memory = createMemoryStore();
    // The write's claim answers after the read-only call has stopped the run (calls budget).
    const governor = gov({ store: laterClaims(memory, [30]) }, { calls: 1 });
    const run = governor.startRun();
    let payments = 0;
    const write = run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      payments += 1;
      return ok("paid");
    });
    const read = await run.call({ tool: "look", args: {} }, async () => ok("seen"));
    expect(read).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.ended).toBe(true);
    const outcome = await write;
    expect(payments).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
  });

  it("a write not sent because a parallel write in doubt ended the run names no key of its own", async () => {
    const memory = createMemoryStore();
    // The second write's claim answers after the first write's lost answer stopped the run.
    const afterFirst = signalled();
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating", retry: { attempts: 1 } } } },
      { metrics: false, random: () => 0, store: laterClaims(memory, [0, afterFirst.promise]) },
    );
    const run = governor.startRun();
    let payments = 0;
    const doubt = run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      throw timeout();
    });
    void doubt.then(afterFirst.resolve);
    const other = run.call({ tool: "pay", args: { amount: 2 } }, async () => {
      payments += 1;
      return ok("paid");
    });
    const first = await doubt;
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(first.kind === "stop" && first.idempotencyKey).toMatch(/./);
    const second = await other;
    expect(payments).toBe(0);
    // The run's reason, but no key: a person is not sent to check a write that was never made.
    expect(second).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(second.kind === "stop" && second.idempotencyKey).toBeUndefined();
  });

  it("a write in doubt is not recorded as failed when an identical claim answers after the end (a tool that honours keys)", async () => {
    const memory = createMemoryStore();
    // The second call's claim answers after the first call's lost answer stopped the run (it
    // waits for that outcome, not for a time a loaded machine can overrun): it takes the
    // uncertain key over (the server deduplicates by key, so repeating it is allowed), but the
    // run has stopped: nothing is sent after a stop (attack25).
    const afterFirst = signalled();
    const governor = createGovernor(
      {
        tools: {
          pay: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { attempts: 1 } },
        },
      },
      { metrics: false, random: () => 0, store: laterClaims(memory, [0, afterFirst.promise]) },
    );
    const run = governor.startRun();
    const sent: (string | undefined)[] = [];
    const first = run.call({ tool: "pay", args: { amount: 1 } }, async (ctx) => {
      sent.push(ctx.idempotencyKey);
      throw timeout();
    });
    void first.then(afterFirst.resolve);
    const second = run.call({ tool: "pay", args: { amount: 1 } }, async (ctx) => {
      sent.push(ctx.idempotencyKey);
      // The server finds the first attempt's key and answers with its result.
      return ok("paid");
    });
    const doubt = await first;
    expect(doubt).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = doubt.kind === "stop" ? doubt.idempotencyKey : undefined;
    expect(key).toMatch(/./);
    await second;
    // Never recorded as failed: the claim that took it over sent nothing (the run had stopped),
    // so the write stays in doubt under its key, for a person.
    expect(memory.entry(key as string)?.state).not.toBe("failed");
    expect(memory.entry(key as string)?.state).toBe("uncertain");
    expect(sent).toEqual([key]);
  });

  it("with a store that drops nothing early (no release), a write whose claim answers after the end is not sent either", async () => {
    const memory = createMemoryStore();
    const governor = gov({ store: laterClaims(memory, [30], { release: false }) }, { calls: 1 });
    const run = governor.startRun();
    let payments = 0;
    let key: string | undefined;
    const write = run.call({ tool: "pay", args: { amount: 1 } }, async (ctx) => {
      key = ctx.idempotencyKey;
      payments += 1;
      return ok("paid");
    });
    const read = await run.call({ tool: "look", args: {} }, async () => ok("seen"));
    expect(read).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.ended).toBe(true);
    // Its budget was granted before the stop, but it had sent nothing when the run stopped:
    // nothing is sent after a stop (attack25; it was sent before). Its key is freed, not made.
    const outcome = await write;
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(outcome.kind === "stop" && outcome.result.content[0].text).toContain("not made");
    expect(payments).toBe(0);
    expect(key).toBeUndefined();
  });

  it.each([
    ["claims no key once it has ended", true],
    ["is not sent either with a store that drops nothing early (no release)", false],
  ])("a write admitted just before its run stopped %s", async (_name, releases) => {
    const memory = createMemoryStore();
    let claims = 0;
    const claim: Store["claim"] = (k, h, o) => {
      claims += 1;
      return memory.claim(k, h, o);
    };
    const store = memoryStoreWith({ claim }, memory, { release: releases });
    let approve = () => {};
    const approved = new Promise<boolean>((resolve) => {
      approve = () => resolve(true);
    });
    // Both calls wait for approval; the write is admitted first and takes the one call of the
    // budget, then the read is refused and stops the run before the write mints its key.
    const governor = createGovernor(
      {
        tools: { pay: { effect: "mutating", access: "confirm" }, look: { access: "confirm" } },
        budgets: { calls: 1 },
      },
      { metrics: false, store, onConfirm: () => approved },
    );
    const run = governor.startRun();
    let payments = 0;
    const write = run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      payments += 1;
      return ok("paid");
    });
    const read = run.call({ tool: "look", args: {} }, async () => ok("seen"));
    approve();
    expect(await read).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    if (releases) {
      expect(await write).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
      expect(payments).toBe(0);
      expect(claims).toBe(0);
    } else {
      // Claimed after the stop, then settled as not sent: nothing is sent after a stop (attack25;
      // it was sent before).
      expect(await write).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
      expect(payments).toBe(0);
      // Its key and its content's entry (doubt.ts).
      expect(claims).toBe(2);
    }
  });
});

describe("a key the run's end settles failed (a correction's write in doubt) is not claimed after it", () => {
  it("with a store that drops nothing early (no release), an identical write whose claim answers after the end is not sent", async () => {
    const memory = createMemoryStore();
    // The second write's claim answers after a read stopped the run (calls budget).
    const governor = gov({ store: laterClaims(memory, [0, 30], { release: false }) }, { calls: 2 });
    const run = governor.startRun();
    const keys: (string | undefined)[] = [];
    const create = async (ctx: AttemptContext) => {
      keys.push(ctx.idempotencyKey);
      return {
        content: [{ type: "text", text: "Invalid date format: expected YYYY-MM-DD" }],
        isError: true,
      };
    };
    const first = await run.call({ tool: "pay", args: { date: "tomorrow" } }, create);
    // The model is asked to correct it; the write may have happened, so its key stays uncertain
    // while the run lives, and is settled failed when it ends (nobody else can claim it).
    expect(first).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(keys).toHaveLength(1);
    expect(memory.entry(keys[0] as string)?.state).toBe("uncertain");
    const again = run.call({ tool: "pay", args: { date: "tomorrow" } }, create);
    const read = await run.call({ tool: "look", args: {} }, async () => ok("seen"));
    expect(read).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.ended).toBe(true);
    const outcome = await again;
    // Was sent: the end's settle freed the key before this claim took effect, and the write
    // went again although the first may have happened.
    expect(keys).toHaveLength(1);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeUndefined();
  });

  it("nor one whose claim is issued after the end (admitted before it), a callId key too", async () => {
    const memory = createMemoryStore();
    let claims = 0;
    const claim: Store["claim"] = (k, h, o) => {
      claims += 1;
      return memory.claim(k, h, o);
    };
    const store = memoryStoreWith({ claim }, memory);
    let approve = () => {};
    const approved = new Promise<boolean>((resolve) => {
      approve = () => resolve(true);
    });
    let confirms = 0;
    // The first write is approved at once; then the identical write and a read wait for approval:
    // the write is admitted first, and the read, refused, stops the run before the write's claim.
    const governor = createGovernor(
      {
        tools: { pay: { effect: "mutating", access: "confirm" }, look: { access: "confirm" } },
        budgets: { calls: 2 },
      },
      {
        metrics: false,
        store,
        onConfirm: () => (++confirms === 1 ? true : approved),
      },
    );
    const run = governor.startRun();
    let creates = 0;
    const create = async () => {
      creates += 1;
      return {
        content: [{ type: "text", text: "Invalid date format: expected YYYY-MM-DD" }],
        isError: true,
      };
    };
    const call = { tool: "pay", args: { date: "tomorrow" }, callId: "c1" };
    expect(await run.call(call, create)).toMatchObject({ kind: "model" });
    const again = run.call(call, create);
    const read = run.call({ tool: "look", args: {} }, async () => ok("seen"));
    approve();
    expect(await read).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(await again).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    // Was 2 (claims 2): the end had settled the first write's key failed.
    expect(creates).toBe(1);
    // The first write's key and its content's entry (doubt.ts); none after the end.
    expect(claims).toBe(2);
  });
});
