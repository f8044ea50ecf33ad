import { createMemoryStore } from "@governor/core";
import { describe, expect, it } from "vitest";
import { createDurableDoubts } from "./durable-doubts.ts";
import type { RememberedStop } from "./stops.ts";

const stop = (key: string): RememberedStop => ({
  reason: "uncertain_mutation",
  scope: "call",
  tool: "charge",
  until: 0,
  idempotencyKey: key,
});

describe("durable doubts", () => {
  it("refuses the identical call while its key is in doubt, by content, per server", async () => {
    const store = createMemoryStore();
    const doubts = createDurableDoubts(store, "billing");
    store.claim("k1", "h", { now: 1_000, allowUncertain: false, leaseMs: 1_000 });
    store.settle("k1", "uncertain", { now: 1_100 });
    await doubts.record("charge", { cents: 5, to: "a" }, stop("k1"));
    // Same arguments in another key order: the same call.
    expect(await doubts.blocking("charge", { to: "a", cents: 5 })).toMatchObject({
      reason: "uncertain_mutation",
      scope: "call",
      idempotencyKey: "k1",
    });
    expect(await doubts.blocking("charge", { cents: 6, to: "a" })).toBeUndefined();
    expect(await doubts.blocking("refund", { cents: 5, to: "a" })).toBeUndefined();
    expect(
      await createDurableDoubts(store, "other").blocking("charge", { cents: 5, to: "a" }),
    ).toBeUndefined();
  });

  it("lets the call through once a person settled its key, and forgets the doubt", async () => {
    const store = createMemoryStore();
    const doubts = createDurableDoubts(store, undefined);
    store.claim("k1", "h", { now: 1_000, allowUncertain: false, leaseMs: 1_000 });
    store.settle("k1", "uncertain", { now: 1_100 });
    await doubts.record("charge", { cents: 5 }, stop("k1"));
    store.settle("k1", "failed", { now: 2_000 });
    expect(await doubts.blocking("charge", { cents: 5 })).toBeUndefined();
    // Forgotten: a later write in doubt of the same call is recorded afresh.
    store.settle("k1", "uncertain", { now: 3_000 });
    expect(await doubts.blocking("charge", { cents: 5 })).toBeUndefined();
  });

  it("keeps a doubt whose key the ledger never held, and records nothing without a key", async () => {
    const store = createMemoryStore();
    const doubts = createDurableDoubts(store, undefined);
    await doubts.record("charge", {}, stop("never-claimed"));
    expect(await doubts.blocking("charge", {})).toMatchObject({ idempotencyKey: "never-claimed" });
    await doubts.record("refund", {}, { ...stop("x"), idempotencyKey: undefined } as never);
    expect(await doubts.blocking("refund", {})).toBeUndefined();
  });
});
