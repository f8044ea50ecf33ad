import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor, type GovernorOptions } from "./governor.ts";
import type { AttemptContext } from "./types.ts";

/**
 * Attacks on the index of writes in doubt (issue 26, docs/idempotency.md "A write in doubt"):
 * an identical write is never sent while one is in doubt, whatever the model changes around it.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
const inProgress = (extra: Record<string, unknown> = {}) => ({
  content: [
    {
      type: "text",
      text: "409 Conflict: another request with idempotency key gk_1 is still being processed. Retry in a few seconds.",
    },
  ],
  isError: true,
  ...extra,
});

const keyedGov = (tool: Record<string, unknown>, options: GovernorOptions = {}) =>
  createGovernor(
    { tools: { charge: { effect: "mutating", retry: { attempts: 1 }, ...tool } } },
    { metrics: false, random: () => 0, ...options },
  );

describe("attack: what the model may change around an identical write", () => {
  it("a key the model fills in itself (the tool's idempotency argument) does not make a resend another write", async () => {
    const governor = keyedGov({
      idempotency: { honorsKeys: true, argument: "idempotency_key" },
    });
    const run = governor.startRun();
    const sent: unknown[] = [];
    const charge = async (ctx: AttemptContext) => {
      sent.push(ctx.args);
      if (sent.length === 1) throw reset(); // charged, answer lost
      return ok("charged");
    };
    const first = await run.call(
      { tool: "charge", args: { amount: 5, idempotency_key: "model-1" }, callId: "c1" },
      charge,
    );
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    // The model sends the charge again with a fresh key of its own (the schema shows the field).
    const again = await run.call(
      { tool: "charge", args: { amount: 5, idempotency_key: "model-2" }, callId: "c2" },
      charge,
    );
    expect(sent).toHaveLength(1);
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
  });

  it("key order and 1 vs 1.0 give the same write", async () => {
    const governor = keyedGov({ idempotency: { honorsKeys: false } });
    const run = governor.startRun();
    let sent = 0;
    const charge = async () => {
      sent += 1;
      throw reset();
    };
    await run.call(
      { tool: "charge", args: JSON.parse('{"amount":1.0,"to":"a"}'), callId: "c1" },
      charge,
    );
    const again = await run.call(
      { tool: "charge", args: JSON.parse('{"to":"a","amount":1}'), callId: "c2" },
      charge,
    );
    expect(sent).toBe(1);
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
  });
});

describe("attack: in-progress answers", () => {
  it("a policy rule reading 409 as a correction does not free the write in doubt", async () => {
    const governor = keyedGov({
      idempotency: { honorsKeys: false },
      rules: [{ match: "409", action: "correct_arguments" }],
    });
    const run = governor.startRun();
    let sent = 0;
    const charge = async () => {
      sent += 1;
      return sent === 1 ? inProgress() : ok("charged");
    };
    const first = await run.call({ tool: "charge", args: { amount: 5 }, callId: "c1" }, charge);
    const again = await run.call({ tool: "charge", args: { amount: 5 }, callId: "c2" }, charge);
    // Held: the policy's action stands (the model reads a correction), but the key stays in doubt,
    // so the identical resend is refused and nothing is sent twice.
    expect(first).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(sent).toBe(1);
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
  });

  for (const retryAfterMs of [1e12, -5, Number.NaN]) {
    it(`Retry-After ${retryAfterMs} on an in-progress answer: waits no longer than the deadline, same key`, async () => {
      const governor = keyedGov(
        {
          idempotency: { honorsKeys: true },
          retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
        },
        {},
      );
      const run = governor.startRun({ policy: { budgets: { wallTimeMs: 1500 } } } as never);
      const keys: (string | undefined)[] = [];
      const started = Date.now();
      const outcome = await run.call(
        { tool: "charge", args: { amount: 5 }, callId: "c1" },
        async (ctx) => {
          keys.push(ctx.idempotencyKey);
          if (keys.length === 1) throw reset();
          if (keys.length === 2) return inProgress({ structuredContent: { retryAfterMs } });
          return ok("charged");
        },
      );
      expect(Date.now() - started).toBeLessThan(5000);
      expect(new Set(keys).size).toBe(1);
      expect(["ok", "stop"]).toContain(outcome.kind);
      if (outcome.kind === "stop") expect(outcome.reason).toBe("uncertain_mutation");
    });
  }
});

/** A store whose settles of call keys (not content entries) fail, as a store dying between them. */
function settleOfKeysFails(inner: Store): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "settle") {
        return (key: string, ...rest: unknown[]) => {
          if (!key.startsWith("gd_")) throw new Error("connection lost");
          return (target.settle as (...a: unknown[]) => unknown)(key, ...rest);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
}

describe("attack: the store fails between the mirror and the key's settle", () => {
  it("a success whose key settle failed: the model does not read it as unanswered while the identical resend goes out", async () => {
    const store = settleOfKeysFails(createMemoryStore());
    const governor = keyedGov({ idempotency: { honorsKeys: false } }, { store });
    const run = governor.startRun({ idempotencyScope: "s" });
    let sent = 0;
    const charge = async () => {
      sent += 1;
      return ok("charged");
    };
    const first = await run.call({ tool: "charge", args: { amount: 5 }, callId: "c1" }, charge);
    const again = await governor
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c2" }, charge);
    // Either the model read the success (a resend is a new write), or the resend was refused.
    const sawSuccess = first.kind === "ok";
    expect({ first: first.kind, again: again.kind, sent }).toSatisfy(
      () => sawSuccess || (sent === 1 && again.kind !== "ok"),
    );
  });
});

/** A store whose first settle of a content entry fails (the connection drops once). */
function firstDoubtSettleFails(inner: Store): Store {
  let failed = false;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === "settle") {
        return (key: string, ...rest: unknown[]) => {
          if (key.startsWith("gd_") && !failed) {
            failed = true;
            throw new Error("connection lost");
          }
          return (target.settle as (...a: unknown[]) => unknown)(key, ...rest);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
}

describe("attack: governor.settle when the store fails part way", () => {
  it("a settle by hand that failed once and is retried frees the identical write (was: refused for good)", async () => {
    const inner = createMemoryStore();
    const store = firstDoubtSettleFails(inner);
    const governor = keyedGov({ idempotency: { honorsKeys: false } }, { store: inner });
    const run = governor.startRun({ idempotencyScope: "s" });
    let sent = 0;
    const first = await run.call(
      { tool: "charge", args: { amount: 5 }, callId: "c1" },
      async () => {
        sent += 1;
        throw reset();
      },
    );
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = first.kind === "stop" ? (first.idempotencyKey as string) : "";
    // The person's settle, through a connection that drops once: it fails, they retry it.
    const byHand = keyedGov({ idempotency: { honorsKeys: false } }, { store });
    await expect(byHand.settle(key, "failed")).rejects.toThrow();
    await byHand.settle(key, "failed");
    const again = await governor
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c2" }, async () => {
        sent += 1;
        return ok("charged");
      });
    expect(again).toMatchObject({ kind: "ok" });
    expect(sent).toBe(2);
  });
});

/** A store that counts the keys it is asked about, and whose content-entry claims may fail. */
function watched(inner: Store, failDoubtClaim?: Error) {
  const keys: string[] = [];
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== "claim" && prop !== "settle") return value;
      return (key: string, ...rest: unknown[]) => {
        keys.push(key);
        if (prop === "claim" && key.startsWith("gd_") && failDoubtClaim) throw failDoubtClaim;
        return (value as (...a: unknown[]) => unknown).call(target, key, ...rest);
      };
    },
  });
  return { store, keys };
}

describe("attack: what the index costs and what it lets through to the model", () => {
  it("a read-only call and an observe-only write touch no content entry", async () => {
    const { store, keys } = watched(createMemoryStore());
    const tools = {
      get: { effect: "read_only" as const },
      charge: { effect: "mutating" as const, retry: { attempts: 1 } },
    };
    const governor = createGovernor({ tools }, { metrics: false, store });
    await governor.startRun().call({ tool: "get", args: { id: 1 } }, async () => ok("x"));
    const observing = createGovernor({ observeOnly: true, tools }, { metrics: false, store });
    await observing.startRun().call({ tool: "charge", args: { amount: 5 } }, async () => ok("x"));
    expect(keys.filter((k) => k.startsWith("gd_"))).toEqual([]);
    // A keyed write does pay for it: the watch sees content entries when there are some.
    await governor.startRun().call({ tool: "charge", args: { amount: 5 } }, async () => ok("x"));
    expect(keys.filter((k) => k.startsWith("gd_")).length).toBeGreaterThan(0);
  });

  it("a store error on the content entry's claim reaches the model as the fixed phrase, nothing sent", async () => {
    const secret = "redis://admin:hunter2@10.0.0.5:6379 WRONGPASS";
    const { store } = watched(createMemoryStore(), new Error(secret));
    const hostErrors: unknown[] = [];
    const governor = keyedGov(
      { idempotency: { honorsKeys: false } },
      { store, onHostError: (e) => void hostErrors.push(e) },
    );
    let sent = 0;
    const outcome = await governor
      .startRun()
      .call({ tool: "charge", args: { amount: 5 }, callId: "c1" }, async () => {
        sent += 1;
        return ok("charged");
      });
    expect(sent).toBe(0);
    expect(JSON.stringify(outcome)).not.toContain("hunter2");
    expect(JSON.stringify(outcome)).not.toContain("10.0.0.5");
    expect(outcome.kind).not.toBe("ok");
  });

  it("an identical write refused while the first is out says it is in progress: nothing about taking effect or adjusting the arguments", async () => {
    const governor = keyedGov({ idempotency: { honorsKeys: false } });
    const run = governor.startRun();
    let release: () => void = () => undefined;
    const first = run.call({ tool: "charge", args: { amount: 5 }, callId: "c1" }, async () => {
      await new Promise<void>((r) => {
        release = r;
      });
      return ok("charged");
    });
    await new Promise((r) => setTimeout(r, 5));
    const again = await run.call({ tool: "charge", args: { amount: 5 }, callId: "c2" }, async () =>
      ok("charged twice"),
    );
    release();
    expect(await first).toMatchObject({ kind: "ok" });
    const text = JSON.stringify(again);
    expect(text).not.toContain("charged twice");
    expect(text).toMatch(/identical call is still in progress/);
    expect(text).not.toMatch(/may have taken effect/);
    // Nor that the target changed and the arguments need adjusting (was: the correction's advice,
    // which has the model send an adjusted charge, a second write, while the first is out).
    expect(text).not.toMatch(/adjust the arguments|target changed/i);
  });
});

describe("attack: the first send outlives the content entry's lease", () => {
  it("an identical write during the hang is refused; after the first succeeds, identical writes are new writes again", async () => {
    let t = 1_000_000;
    const store = createMemoryStore({ now: () => t } as never);
    const governor = createGovernor(
      {
        budgets: { wallTimeMs: 60 * 60_000 },
        tools: { charge: { effect: "mutating", retry: { attempts: 1 } } },
      } as never,
      { metrics: false, random: () => 0, store, now: () => t },
    );
    let sent = 0;
    let release: () => void = () => undefined;
    const first = governor
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c1" }, async () => {
        sent += 1;
        await new Promise<void>((r) => {
          release = r;
        });
        return ok("charged");
      });
    await new Promise((r) => setTimeout(r, 5));
    t += 16 * 60_000; // past the 15-minute lease, the first still hangs
    const charge = async () => {
      sent += 1;
      return ok("charged");
    };
    const during = await governor
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c2" }, charge);
    expect(sent).toBe(1);
    expect(during.kind).not.toBe("ok");
    release();
    expect(await first).toMatchObject({ kind: "ok" });
    t += 1000;
    // The first answered: its write is not in doubt, an identical write is a new one.
    const after = await governor
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c3" }, charge);
    expect(after).toMatchObject({ kind: "ok" });
    expect(sent).toBe(2);
  });
});

describe("attack: no arguments and empty arguments", () => {
  it("a write sent without arguments and its resend with {} are the same write", async () => {
    const governor = keyedGov({ idempotency: { honorsKeys: false } });
    const run = governor.startRun();
    let sent = 0;
    const charge = async () => {
      sent += 1;
      throw reset();
    };
    await run.call({ tool: "charge", callId: "c1" }, charge);
    const again = await run.call({ tool: "charge", args: {}, callId: "c2" }, charge);
    expect(sent).toBe(1);
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
  });
});
