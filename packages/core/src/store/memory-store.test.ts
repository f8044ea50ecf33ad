import { describe, expect, it } from "vitest";
import { GovernorError } from "../errors.ts";
import { describeStoreContract } from "../testing/index.ts";
import { createMemoryStore } from "./memory-store.ts";

describeStoreContract("MemoryStore", (options) => createMemoryStore(options));

const claimAt = (now: number, allowUncertain = false) => ({ now, allowUncertain, leaseMs: 1_000 });

describe("createMemoryStore", () => {
  it("reads values back as JSON would give them: primitives as they are, objects as copies", () => {
    const store = createMemoryStore();
    store.set("nan", Number.NaN);
    store.set("zero", -0);
    store.set("text", "5");
    store.set("nothing", null);
    store.set("object", { at: new Date(0) });
    expect(store.get("nan")).toBeNull();
    expect(Object.is(store.get("zero"), 0)).toBe(true);
    expect(store.get("text")).toBe("5");
    expect(store.get("nothing")).toBeNull();
    expect(store.get("object")).toEqual({ at: "1970-01-01T00:00:00.000Z" });
    store.set("gone", undefined);
    expect(store.get("gone")).toBeUndefined();
    // A string is not a counter, even one that reads as a number.
    expect(() => store.increment("text", 1, 1_000)).toThrow(/not an integer counter/);
  });

  it("reads flat objects back exactly as a JSON round trip gives them, fresh and unshared", () => {
    const store = createMemoryStore();
    const proto = Object.create(null) as Record<string, unknown>;
    proto.b = 1;
    proto.a = "x";
    const withGetter = {
      get computed() {
        return 7;
      },
    };
    const values: object[] = [
      { failures: 1 },
      { failures: 3, openedAt: 1_700_000_000_000 },
      {},
      { z: 1, 2: "two", a: true, 1: null, b: -0, c: Number.NaN, d: Number.POSITIVE_INFINITY },
      { gone: undefined, fn: () => 1, sym: Symbol("s"), kept: "k", [Symbol("key")]: 1 },
      { toJSON: () => ({ replaced: true }), other: 1 },
      { toJSON: "plain field" },
      JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as object,
      { nested: { failures: 1 } },
      [1, 2, { a: 1 }],
      new Date(5),
      proto,
      withGetter,
    ];
    for (const [i, value] of values.entries()) {
      const key = `k${i}`;
      store.set(key, value);
      const expected = JSON.parse(JSON.stringify(value)) as unknown;
      const first = store.get<Record<string, unknown>>(key);
      // Same value, same key order, same prototype as JSON.parse gives.
      expect(first).toStrictEqual(expected);
      expect(JSON.stringify(first)).toBe(JSON.stringify(expected));
      expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(expected));
      expect(Object.is(first?.b, -0)).toBe(false);
      // A caller's changes reach neither the store nor the next reader.
      if (typeof first === "object" && first !== null && !Array.isArray(first)) {
        first.added = 1;
        expect(Object.isFrozen(first)).toBe(false);
      }
      const second = store.get<Record<string, unknown>>(key);
      if (typeof first === "object") expect(second).not.toBe(first);
      expect(second).toStrictEqual(expected);
    }
    // Changing the object after the set changes nothing stored.
    const state: { failures: number; openedAt?: number } = { failures: 1 };
    store.set("state", state);
    state.failures = 9;
    state.openedAt = 1;
    expect(store.get("state")).toStrictEqual({ failures: 1 });
    // What JSON refuses, set refuses too, and the old value stays.
    expect(() => store.set("state", { n: 1n })).toThrow(TypeError);
    expect(store.get("state")).toStrictEqual({ failures: 1 });
    // An object is not a counter.
    expect(() => store.increment("state", 1, 1_000)).toThrow(/not an integer counter/);
  });

  it("answers synchronously", () => {
    const store = createMemoryStore();
    expect(store.set("k", 1)).toBeUndefined();
    expect(store.get("k")).toBe(1);
    expect(store.increment("c", 1, 1_000)).toBe(1);
    expect(store.claim("l", "h", claimAt(1)).status).toBe("claimed");
    expect(store.entry("l")?.state).toBe("pending");
  });

  it("never evicts ledger entries, however full the LRU of values gets", () => {
    const store = createMemoryStore({ maxEntries: 10, maxUnsettled: 50 });
    for (let i = 0; i < 20; i++) store.claim(`pending-${i}`, "h", claimAt(1_000));
    for (let i = 0; i < 20; i++) {
      store.claim(`uncertain-${i}`, "h", claimAt(1_000));
      store.settle(`uncertain-${i}`, "uncertain", { now: 1_100 });
    }
    store.claim("settled", "h", claimAt(1_000));
    store.settle("settled", "succeeded", { now: 1_100, result: 1 });
    for (let i = 0; i < 5_000; i++) store.set(`value-${i}`, i);

    for (let i = 0; i < 20; i++) {
      expect(store.entry(`pending-${i}`)?.state).toBe("pending");
      expect(store.entry(`uncertain-${i}`)?.state).toBe("uncertain");
      expect(store.claim(`uncertain-${i}`, "h", claimAt(1_200)).status).toBe("uncertain");
    }
    expect(store.entry("settled")?.result).toBe(1);
    // Values are the LRU's to drop: it stays bounded.
    expect(store.get("value-0")).toBeUndefined();
    expect(store.get("value-4999")).toBe(4_999);
  });

  it("issue 8.6: the default store keeps a succeeded write for 24 h, whatever other traffic comes", () => {
    let clock = 1_000;
    const store = createMemoryStore({ now: () => clock });
    expect(store.claim("charge", "h", claimAt(1_000)).status).toBe("claimed");
    store.settle("charge", "succeeded", { now: 1_100, result: { id: "ch_1" } });
    // Far more than the 10,000 values and counters the LRU holds: breaker keys, budgets, set().
    for (let i = 0; i < 25_000; i++) {
      store.increment(`budget-${i}`, 1, 60_000);
      store.set(`breaker-${i}`, { failures: i }, 60_000);
    }
    clock += 86_400_000 - 1;
    const redelivered = store.claim("charge", "h", claimAt(2_000));
    expect(redelivered.status).toBe("succeeded");
    expect(redelivered.status === "succeeded" && redelivered.entry.result).toEqual({ id: "ch_1" });
    clock += 2;
    expect(store.entry("charge")).toBeUndefined();
  });

  it("issue 26.5: at its cap the oldest settled entries make room; pending and uncertain ones never go", () => {
    const clock = 1_000;
    const store = createMemoryStore({ maxLedgerEntries: 3, retentionMs: 1_000, now: () => clock });
    for (const key of ["a", "b", "c"]) {
      expect(store.claim(key, "h", claimAt(1_000)).status).toBe("claimed");
      store.settle(key, key === "c" ? "failed" : "succeeded", { now: 1_100, result: key });
    }
    // Was ledger_full for the whole retention: a settled entry refused every new write.
    expect(store.claim("d", "h", claimAt(1_200)).status).toBe("claimed");
    expect(store.entry("a")).toBeUndefined();
    expect(store.entry("b")?.state).toBe("succeeded");
    // d stays pending, e becomes uncertain: b, then c, make room for them.
    expect(store.claim("e", "h", claimAt(1_200)).status).toBe("claimed");
    store.settle("e", "uncertain", { now: 1_200 });
    expect(store.entry("b")).toBeUndefined();
    expect(store.entry("c")?.state).toBe("failed");
    expect(store.claim("f", "h", claimAt(1_300)).status).toBe("claimed");
    expect(store.entry("c")).toBeUndefined();
    // d, e and f are all unsettled: nothing settled is left to drop, and they never go.
    expect(store.claim("g", "h", claimAt(1_300))).toEqual({ status: "ledger_full" });
    for (const key of ["d", "f"]) expect(store.entry(key)?.state).toBe("pending");
    expect(store.entry("e")?.state).toBe("uncertain");
  });

  it("at its cap a failed entry still under its hold (holdMs) is not dropped to make room: its key stays in flight", () => {
    let clock = 1_000;
    const store = createMemoryStore({ maxLedgerEntries: 2, retentionMs: 60_000, now: () => clock });
    const first = store.claim("held", "h", claimAt(1_000));
    const claimedAt = first.status === "claimed" ? (first.claimedAt as number) : 0;
    store.settle("held", "failed", { now: 1_000, claimedAt, holdMs: 500 });
    store.claim("done", "h", claimAt(1_000));
    store.settle("done", "succeeded", { now: 1_000, result: "done" });
    // The oldest settled entry is held: the next one makes room instead.
    expect(store.claim("x", "h", claimAt(1_100)).status).toBe("claimed");
    expect(store.entry("done")).toBeUndefined();
    // Was claimed: the held entry had gone, its key free while its holder could still keep an
    // answer there (an identical write of another process sent a second time).
    expect(store.claim("held", "h", claimAt(1_100)).status).toBe("in_flight");
    // Nothing but the held entry is left to drop: a new key waits for room, the hold stands.
    expect(store.claim("y", "h", claimAt(1_200))).toEqual({ status: "ledger_full" });
    expect(store.claim("held", "h", claimAt(1_200)).status).toBe("in_flight");
    // Once the hold has run out, it makes room as any settled entry.
    clock = 1_500;
    expect(store.claim("y", "h", claimAt(1_500)).status).toBe("claimed");
    expect(store.entry("held")).toBeUndefined();
    expect(store.entry("x")?.state).toBe("pending");
  });

  it("reads a hold by the clock that keeps it (the store's), whatever the callers' now says", () => {
    let clock = 1_000;
    const store = createMemoryStore({ retentionMs: 10, now: () => clock });
    const first = store.claim("k", "h", claimAt(5_000));
    const claimedAt = first.status === "claimed" ? (first.claimedAt as number) : 0;
    store.settle("k", "failed", { now: 5_000, claimedAt, holdMs: 500 });
    // The callers' clock stepped a minute ahead (a wall clock set forward): by the store's clock,
    // which keeps the entry for the hold, its holder may still keep an answer there. Was claimed:
    // an identical write of another caller sent a second time within the hold.
    clock = 1_100;
    expect(store.claim("k", "h", claimAt(65_000)).status).toBe("in_flight");
    // A clock stepped back does not keep it past the hold either: the entry goes when the hold
    // runs out by the store's clock, and so does the hold (the same claim always answers alike).
    clock = 1_600;
    expect(store.claim("k", "h", claimAt(4_000)).status).toBe("claimed");
  });

  it("release(owner) drops that owner's settled entries now, giving their room back and their results'", () => {
    const store = createMemoryStore({ maxLedgerEntries: 4, maxResultBytes: 24 });
    const owned = (owner: string | undefined) => ({ ...claimAt(1_000), owner });
    for (const [key, owner] of [
      ["a", "run-1"],
      ["b", "run-1"],
      ["c", "run-1"],
      ["d", "run-2"],
    ] as const) {
      expect(store.claim(key, "h", owned(owner)).status).toBe("claimed");
    }
    store.settle("a", "succeeded", { now: 1_100, result: "0123456789" });
    store.settle("b", "failed", { now: 1_100 });
    store.settle("d", "succeeded", { now: 1_100, result: "0123456789" });
    store.release("run-1");
    expect(store.entry("a")).toBeUndefined();
    expect(store.entry("b")).toBeUndefined();
    // Still in flight: kept, and settles later as any entry (kept for the retention).
    expect(store.entry("c")?.state).toBe("pending");
    expect(store.claim("e", "h", owned(undefined)).status).toBe("claimed");
    expect(store.claim("f", "h", owned("run-3")).status).toBe("claimed");
    // c, d, e, f: at the cap, d (settled) would make room; kept here: no new claim.
    store.settle("c", "succeeded", { now: 1_200, result: "0123456789" });
    // a's result gave its room back: d's and c's (12 units of JSON text each) both fit.
    expect(store.entry("d")?.result).toBe("0123456789");
    expect(store.entry("c")?.result).toBe("0123456789");
    store.release("run-1");
    store.release("unknown");
    expect(store.entry("c")?.state).toBe("succeeded");
    expect(store.entry("d")?.state).toBe("succeeded");
  });

  it("release(owner) after retention already dropped some of its entries drops only its own", () => {
    let clock = 1_000;
    const store = createMemoryStore({ retentionMs: 100, now: () => clock });
    store.claim("old", "h", { ...claimAt(1), owner: "run-1" });
    store.settle("old", "succeeded", { now: 2 });
    clock += 101;
    // Gone by retention, then the same key made again by a host settling it by hand.
    expect(store.entry("old")).toBeUndefined();
    store.settle("old", "succeeded", { now: 3 });
    store.claim("new", "h", { ...claimAt(4), owner: "run-1" });
    store.settle("new", "failed", { now: 5 });
    store.release("run-1");
    expect(store.entry("new")).toBeUndefined();
    expect(store.entry("old")?.state).toBe("succeeded");
  });

  it("keeps settled entries for the retention on its own clock", () => {
    let clock = 1_000;
    const store = createMemoryStore({ retentionMs: 500, now: () => clock });
    store.claim("k", "h", claimAt(1));
    store.settle("k", "succeeded", { now: 2, result: "r" });
    clock += 500;
    expect(store.entry("k")?.result).toBe("r");
    clock += 1;
    expect(store.entry("k")).toBeUndefined();
  });

  describe("keeps replay results within maxResultBytes", () => {
    // JSON text of 10 characters each: "xxxxxxxx" with its quotes.
    const ten = (c: string) => c.repeat(8);
    const settled = (store: ReturnType<typeof createMemoryStore>, key: string, result: unknown) => {
      expect(store.claim(key, "h", claimAt(1)).status).toBe("claimed");
      store.settle(key, "succeeded", { now: 2, result });
    };

    it("lets the oldest results go first; their writes stay done and are never run again", () => {
      const store = createMemoryStore({ maxResultBytes: 25 });
      settled(store, "a", ten("a"));
      settled(store, "b", ten("b"));
      expect(store.entry("a")?.result).toBe(ten("a"));
      settled(store, "c", ten("c"));
      // 30 characters would not fit: a's result went, b's and c's are kept.
      expect(store.entry("a")).toMatchObject({ state: "succeeded", resultUnavailable: true });
      expect(store.entry("a")).not.toHaveProperty("result");
      expect(store.entry("b")?.result).toBe(ten("b"));
      expect(store.entry("c")?.result).toBe(ten("c"));
      // A later claim of a's key is answered as done, with no result: the write does not run again.
      const again = store.claim("a", "h", claimAt(3));
      expect(again).toMatchObject({ status: "succeeded", entry: { resultUnavailable: true } });
    });

    it("does not keep a result longer than the whole budget, and keeps the others", () => {
      const store = createMemoryStore({ maxResultBytes: 25 });
      settled(store, "small", ten("s"));
      settled(store, "huge", "x".repeat(100));
      expect(store.entry("huge")).toMatchObject({ state: "succeeded", resultUnavailable: true });
      expect(store.entry("small")?.result).toBe(ten("s"));
    });

    it("gives back the room of results that expire, are replaced or are claimed again", () => {
      let clock = 0;
      const store = createMemoryStore({ maxResultBytes: 20, retentionMs: 100, now: () => clock });
      settled(store, "a", ten("a"));
      settled(store, "b", ten("b"));
      clock = 101;
      // a and b expired: their 20 characters are free again, so c and d both keep theirs.
      settled(store, "c", ten("c"));
      settled(store, "d", ten("d"));
      expect(store.entry("c")?.result).toBe(ten("c"));
      expect(store.entry("d")?.result).toBe(ten("d"));
      // A host settling d again with a short result frees the difference: e fits beside c and d.
      store.settle("d", "succeeded", { now: 3, result: 1 });
      settled(store, "e", "e".repeat(7));
      expect(store.entry("c")?.result).toBe(ten("c"));
      expect(store.entry("d")?.result).toBe(1);
      expect(store.entry("e")?.result).toBe("e".repeat(7));
      // Settled as failed, then claimed again, a key holds no result and no room.
      store.settle("c", "failed", { now: 4 });
      expect(store.entry("c")).not.toHaveProperty("resultUnavailable");
      settled(store, "f", ten("f"));
      expect(store.entry("e")?.result).toBe("e".repeat(7));
      expect(store.entry("f")?.result).toBe(ten("f"));
    });
  });

  it("expires a counter ttlMs after its creation, not after its last increment", () => {
    let clock = 1_000;
    const store = createMemoryStore({ now: () => clock });
    expect(store.increment("c", 1, 100)).toBe(1);
    clock += 60;
    expect(store.increment("c", 1, 100)).toBe(2);
    clock += 41;
    expect(store.increment("c", 1, 100)).toBe(1);
    store.set("plain", 5);
    expect(store.increment("plain", 1, 100)).toBe(6);
    clock += 101;
    expect(store.get("plain")).toBeUndefined();
  });

  it("replays the recorded result: changes to the settled value or to a replay never reach it", () => {
    const store = createMemoryStore();
    store.claim("k", "h", claimAt(1_000));
    const value = { content: [{ type: "text", text: "charged" }], at: new Date(0) };
    store.settle("k", "succeeded", { now: 1_100, result: value });
    value.content[0] = { type: "text", text: "changed by the caller" };
    const first = store.claim("k", "h", claimAt(1_200));
    const recorded = {
      content: [{ type: "text", text: "charged" }],
      at: "1970-01-01T00:00:00.000Z",
    };
    expect(first).toMatchObject({ status: "succeeded", entry: { result: recorded } });
    const replayed =
      first.status === "succeeded" ? (first.entry.result as typeof recorded) : undefined;
    replayed?.content.push({ type: "text", text: "added to a replay" });
    expect(store.entry("k")?.result).toEqual(recorded);
    expect(store.claim("k", "h", claimAt(1_300))).toMatchObject({ entry: { result: recorded } });
  });

  it("keeps a counter as a counter: read by get, replaced by set, counted on from there", () => {
    let clock = 1_000;
    const store = createMemoryStore({ now: () => clock });
    expect(store.increment("c", 2, 100)).toBe(2);
    expect(store.increment("c", -1, 100)).toBe(1);
    expect(store.get("c")).toBe(1);
    store.set("c", 10);
    expect(store.get("c")).toBe(10);
    expect(store.increment("c", 1, 100)).toBe(11);
    expect(store.get("c")).toBe(11);
    store.set("c", "text");
    expect(() => store.increment("c", 1, 100)).toThrow(/not an integer counter/);
    clock += 101;
    expect(store.increment("d", 1, 100)).toBe(1);
    clock += 101;
    expect(store.get("d")).toBeUndefined();
  });

  it("drops settled entries past their retention in settle order, whatever moved in between", () => {
    let clock = 0;
    const store = createMemoryStore({ maxLedgerEntries: 2, retentionMs: 1_000, now: () => clock });
    store.claim("a", "h", claimAt(0));
    store.settle("a", "failed", { now: 0 });
    clock = 500;
    store.claim("b", "h", claimAt(500));
    store.settle("b", "succeeded", { now: 500, result: "b" });
    // "a" leaves the front of the settled entries, then comes back behind "b".
    clock = 600;
    expect(store.claim("a", "h", claimAt(600)).status).toBe("claimed");
    clock = 700;
    store.settle("a", "failed", { now: 700 });
    // "b" has expired (1,500), "a" has not (1,700): "b" goes first, by its expiry.
    clock = 1_600;
    expect(store.claim("c", "h", claimAt(1_600)).status).toBe("claimed");
    expect(store.entry("b")).toBeUndefined();
    expect(store.entry("a")?.state).toBe("failed");
    // At the cap again, "a" is the oldest settled (issue 26.5): it makes room, "c" stays.
    expect(store.claim("d", "h", claimAt(1_600)).status).toBe("claimed");
    expect(store.entry("a")).toBeUndefined();
    expect(store.entry("c")?.state).toBe("pending");
  });

  it("refuses to count a value that is not an integer", () => {
    const store = createMemoryStore();
    store.set("k", { a: 1 });
    expect(() => store.increment("k", 1, 1_000)).toThrow(/not an integer counter/);
    expect(() => store.increment("n", 0.5, 1_000)).toThrow(/safe integer/);
  });

  it("treats writing undefined as a delete", () => {
    const store = createMemoryStore();
    store.set("k", 1);
    store.set("k", undefined);
    expect(store.get("k")).toBeUndefined();
  });

  it("says which option is wrong and what it accepts", () => {
    const cases = [
      [{ maxEntries: 0 }, /maxEntries must be a positive integer, got 0/],
      [{ maxUnsettled: 1.5 }, /maxUnsettled must be a positive integer, got 1.5/],
      [{ maxLedgerEntries: 0 }, /maxLedgerEntries must be a positive integer, got 0/],
      [{ retentionMs: -1 }, /retentionMs must be a positive finite number of ms, got -1/],
      [{ maxResultBytes: 0 }, /maxResultBytes must be a positive integer, got 0/],
    ] as const;
    for (const [options, message] of cases) {
      let thrown: unknown;
      try {
        createMemoryStore(options);
      } catch (error) {
        thrown = error;
      }
      expect(GovernorError.isInstance(thrown)).toBe(true);
      expect((thrown as GovernorError).code).toBe("invalid_options");
      expect((thrown as Error).message).toMatch(message);
    }
    expect(() => createMemoryStore().set("k", 1, 0)).toThrow(/ttlMs must be a positive/);
  });
});
