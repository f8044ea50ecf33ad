import { describe, expect, it } from "vitest";
import { createLedgerSpace, type EntryRecord } from "./ledger-space.ts";

/** Counts how often the ledger space reads a record's hold (`heldUntil`). */
function watchHold(record: EntryRecord, reads: { n: number }): void {
  let value = record.heldUntil;
  Object.defineProperty(record, "heldUntil", {
    get: () => {
      reads.n += 1;
      return value;
    },
    set: (next: number) => {
      value = next;
    },
  });
}

/**
 * A ledger space of `maxLedgerEntries` on `clock` whose first `held` keys were freed under a
 * 60 s hold, each hold's reads counted in `reads`.
 */
function heldSpace(held: number, maxLedgerEntries: number, clock: () => number) {
  const space = createLedgerSpace(clock, {
    retentionMs: 60_000,
    maxUnsettled: 1_000_000,
    maxLedgerEntries,
    maxResultBytes: 1_000,
  });
  const reads = { n: 0 };
  for (let i = 0; i < held; i++) {
    const record = space.open(`held${i}`, "h", 0, 1_000, undefined);
    space.record(`held${i}`, record, "failed", 0, undefined, 60_000);
    watchHold(record, reads);
  }
  return { space, reads };
}

describe("createLedgerSpace", () => {
  it("at its cap, passes over the held entries at the front once, not on every claim", () => {
    const held = 2_000;
    // Enough for the settle order to be compacted on the way (its stale slots, the entries dropped
    // behind the held ones, come to outnumber the live ones).
    const claims = 2_500;
    const { space, reads } = heldSpace(held, held + 1, () => 0);
    space.record("free", space.open("free", "h", 0, 1_000, undefined), "failed", 0, undefined);
    // Each new key makes room by dropping the one settled entry that is not held. Was: every
    // claim read all the held entries in front of it again (held × claims reads: a claim's cost
    // grew with the held entries, about 0.9 ms each with 100 000 of them).
    for (let j = 0; j < claims; j++) {
      expect(space.hasRoomFor("new")).toBe(true);
      const record = space.open(`new${j}`, "h", 0, 1_000, undefined);
      space.record(`new${j}`, record, "failed", 0, undefined);
    }
    expect(reads.n).toBeLessThanOrEqual(2 * (held + claims));
    // None of the held entries went to make room.
    for (const i of [0, held - 1]) expect(space.lookup(`held${i}`)?.heldUntil).toBe(60_000);
  });

  it("full of held entries, answers a claim of a new key without reading them all again", () => {
    let clock = 0;
    const held = 2_000;
    const claims = 500;
    const { space, reads } = heldSpace(held, held, () => clock);
    for (let j = 0; j < claims; j++) expect(space.hasRoomFor("new")).toBe(false);
    expect(reads.n).toBeLessThanOrEqual(2 * (held + claims));
    // Once the holds run out (by the store's clock), the oldest makes room.
    clock = 60_000;
    expect(space.hasRoomFor("new")).toBe(true);
    expect(space.lookup("held0")).toBeUndefined();
    expect(space.lookup("held1")?.state).toBe("failed");
  });
});
