import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "./memory-store.ts";
import type { ClaimResult, LedgerEntry, LedgerState } from "./store.ts";

/**
 * The memory store's ledger against a plain model (one map, every expired entry dropped and every
 * budget overrun evicted by a full scan): long runs of claims, settles (by hand, late, again),
 * reads and clock ticks over a few keys, under small caps, so keys move in and out of the settle
 * order and the kept results many times over and the store's queues compact their stale slots.
 * Claims name an owner now and then, and owners are released: their settled entries go, the others
 * stay. Failed settles hold their key now and then (`holdMs`), and claims name a hold's claim as
 * handed over now and then: a held entry answers `in_flight`, and at the cap it is passed over, not
 * dropped. Every claim answers as the model does, and every entry reads as the model's.
 */
interface ModelEntry {
  argsHash: string;
  state: LedgerState;
  updatedAt: number;
  /** A pending entry's lease, or a failed one's hold (counted from `updatedAt`). */
  leaseMs: number;
  /** A failed entry's hold: when it runs out by the store's clock; 0 for none. */
  heldUntil: number;
  result: string | undefined;
  unavailable: boolean;
  expiresAt: number;
  keptAt: number;
  /** Settle order of a settled entry (at its cap, the oldest settled go first). */
  settledSeq: number;
  owner: string | undefined;
  /** The key's latest claim's mark; a success moves it past (ends the claim). */
  claimedAt: number | undefined;
}

function createModel(
  retentionMs: number,
  maxUnsettled: number,
  maxEntries: number,
  budget: number,
) {
  const entries = new Map<string, ModelEntry>();
  let keeps = 0;
  let settles = 0;
  const unsettled = () =>
    [...entries.values()].filter((e) => e.state === "pending" || e.state === "uncertain").length;
  const dropExpired = (at: number) => {
    for (const [key, e] of entries) if (e.expiresAt !== 0 && e.expiresAt < at) entries.delete(key);
  };
  const lookup = (key: string, at: number) => {
    const e = entries.get(key);
    if (e !== undefined && e.expiresAt !== 0 && e.expiresAt < at) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };
  const view = (key: string, e: ModelEntry): LedgerEntry => {
    const base = { key, argsHash: e.argsHash, state: e.state, updatedAt: e.updatedAt };
    if (e.result !== undefined) return { ...base, result: JSON.parse(e.result) as unknown };
    return e.unavailable ? { ...base, resultUnavailable: true } : base;
  };
  /** A new state for an entry; a settled one gets its retention from the clock (`at`). */
  const move = (e: ModelEntry, state: LedgerState, at: number) => {
    e.state = state;
    e.result = undefined;
    e.unavailable = false;
    if (state === "pending" || state === "uncertain") {
      e.expiresAt = 0;
      return;
    }
    dropExpired(at);
    e.expiresAt = at + retentionMs;
    e.settledSeq = ++settles;
  };
  /**
   * At the cap of all entries, the oldest settled ones go (issue 26.5); unsettled ones never, nor
   * settled ones under their hold.
   */
  let heldKept = 0;
  const dropOldestSettled = (at: number) => {
    while (entries.size >= maxEntries) {
      let oldest: [string, ModelEntry] | undefined;
      let held = false;
      for (const [key, x] of entries) {
        if (x.expiresAt === 0) continue;
        if (x.heldUntil > at) {
          held = true;
          continue;
        }
        if (oldest === undefined || x.settledSeq < oldest[1].settledSeq) oldest = [key, x];
      }
      if (held) heldKept++;
      if (oldest === undefined) return;
      entries.delete(oldest[0]);
    }
  };
  const keep = (e: ModelEntry, text: string) => {
    if (text.length > budget) {
      e.unavailable = true;
      return;
    }
    const held = () =>
      [...entries.values()].reduce((n, x) => n + (x.result === undefined ? 0 : x.result.length), 0);
    while (held() + text.length > budget) {
      let oldest: ModelEntry | undefined;
      for (const x of entries.values()) {
        if (x.result !== undefined && (oldest === undefined || x.keptAt < oldest.keptAt))
          oldest = x;
      }
      if (oldest === undefined) break;
      oldest.result = undefined;
      oldest.unavailable = true;
    }
    e.result = text;
    e.keptAt = ++keeps;
  };
  return {
    /** How many times the cap passed over a held entry. */
    heldKept: () => heldKept,
    claim(
      key: string,
      argsHash: string,
      now: number,
      at: number,
      allow: boolean,
      lease: number,
      owner?: string,
      handedOver?: number,
    ) {
      const e = lookup(key, at);
      if (e === undefined) {
        if (unsettled() >= maxUnsettled) return { status: "ledger_full" };
        if (entries.size >= maxEntries) dropExpired(at);
        dropOldestSettled(at);
        if (entries.size >= maxEntries) return { status: "ledger_full" };
        const fresh: ModelEntry = {
          argsHash,
          state: "pending",
          updatedAt: now,
          leaseMs: lease,
          heldUntil: 0,
          result: undefined,
          unavailable: false,
          expiresAt: 0,
          keptAt: 0,
          settledSeq: 0,
          owner,
          claimedAt: now,
        };
        entries.set(key, fresh);
        return { status: "claimed", entry: view(key, fresh), claimedAt: now };
      }
      if (e.argsHash !== "" && e.argsHash !== argsHash) {
        return { status: "args_mismatch", entry: view(key, e) };
      }
      // retaken: the entry was a write in doubt (uncertain, or pending past its lease).
      const take = (retaken = false) => {
        e.argsHash = argsHash;
        e.updatedAt = now;
        e.leaseMs = lease;
        e.heldUntil = 0;
        // A new claim's mark: past every earlier claim of the key.
        e.claimedAt = e.claimedAt === undefined || now > e.claimedAt ? now : e.claimedAt + 1;
        move(e, "pending", at);
        const entry = view(key, e);
        const claimedAt = e.claimedAt;
        return retaken
          ? { status: "claimed", entry, claimedAt, retaken: true }
          : { status: "claimed", entry, claimedAt };
      };
      switch (e.state) {
        case "succeeded":
          return { status: "succeeded", entry: view(key, e) };
        case "failed":
          // Held for its claim, unless the claimer names that claim handed over.
          if (
            e.leaseMs > 0 &&
            now - e.updatedAt < e.leaseMs &&
            !(e.claimedAt !== undefined && e.claimedAt === handedOver)
          ) {
            return { status: "in_flight", entry: view(key, e) };
          }
          return unsettled() >= maxUnsettled ? { status: "ledger_full" } : take();
        case "pending":
          if (now - e.updatedAt < Math.max(lease, e.leaseMs)) {
            return { status: "in_flight", entry: view(key, e) };
          }
          if (allow) return take(true);
          e.updatedAt = now;
          e.leaseMs = 0;
          move(e, "uncertain", at);
          return { status: "uncertain", entry: view(key, e) };
        case "uncertain":
          return allow ? take(true) : { status: "uncertain", entry: view(key, e) };
      }
    },
    settle(
      key: string,
      state: Exclude<LedgerState, "pending">,
      now: number,
      at: number,
      result?: string,
      claimedAt?: number,
      holdMs = 0,
    ) {
      let e = lookup(key, at);
      const found = e !== undefined;
      // Only the key's latest claim frees or marks it, and nothing demotes a success.
      if (
        claimedAt !== undefined &&
        state !== "succeeded" &&
        e !== undefined &&
        (e.state === "succeeded" || e.claimedAt !== claimedAt)
      ) {
        return;
      }
      if (e === undefined) {
        e = {
          argsHash: "",
          state,
          updatedAt: now,
          leaseMs: 0,
          heldUntil: 0,
          result: undefined,
          unavailable: false,
          expiresAt: 0,
          keptAt: 0,
          settledSeq: 0,
          owner: undefined,
          claimedAt: undefined,
        };
        entries.set(key, e);
      } else if (state === "succeeded" && e.claimedAt !== undefined) {
        e.claimedAt += 1;
      }
      e.updatedAt = now;
      e.leaseMs = 0;
      e.heldUntil = 0;
      move(e, state, at);
      if (result !== undefined) keep(e, result);
      // Only a failed settle that frees the entry's claim holds it; kept while held.
      if (found && state === "failed" && claimedAt !== undefined && holdMs > 0) {
        e.leaseMs = holdMs;
        e.heldUntil = at + holdMs;
        e.expiresAt = Math.max(e.expiresAt, e.heldUntil);
      }
    },
    entry(key: string, at: number) {
      const e = lookup(key, at);
      return e === undefined ? undefined : view(key, e);
    },
    /** The owner's settled entries go; its others stay, no longer its own. How many of each. */
    release(owner: string) {
      const count = { dropped: 0, kept: 0 };
      for (const [key, e] of entries) {
        if (e.owner !== owner) continue;
        if (e.state === "succeeded" || e.state === "failed") {
          entries.delete(key);
          count.dropped++;
        } else {
          e.owner = undefined;
          count.kept++;
        }
      }
      return count;
    },
  };
}

type Op =
  | {
      kind: "claim";
      key: number;
      hash: number;
      allow: boolean;
      lease: number;
      owner: string | undefined;
      /** Whose hold the claim passes: none, the key's last claim's, or an older one. */
      handedOver: "none" | "own" | "other";
    }
  | { kind: "release"; owner: string }
  | {
      kind: "settle";
      key: number;
      state: Exclude<LedgerState, "pending">;
      text: string;
      late: boolean;
      holdMs: number;
    }
  | { kind: "read"; key: number }
  | { kind: "tick"; ms: number };

const KEYS = 8;
/** Two hot keys churn (stale slots pile up) while the others sit settled, waiting for expiry. */
const key = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0, max: 1 }) },
  { weight: 2, arbitrary: fc.integer({ min: 2, max: KEYS - 1 }) },
);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 40,
    arbitrary: fc.record({
      kind: fc.constant("claim" as const),
      key,
      hash: fc.integer({ min: 0, max: 5 }).map((h) => (h === 0 ? 1 : 0)),
      allow: fc.boolean(),
      lease: fc.constantFrom(0, 5, 40),
      owner: fc.constantFrom(undefined, "o0", "o1", "o2"),
      handedOver: fc.constantFrom(
        "none" as const,
        "none" as const,
        "own" as const,
        "other" as const,
      ),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("release" as const),
      owner: fc.constantFrom("o0", "o1", "o2"),
    }),
  },
  {
    weight: 50,
    arbitrary: fc.record({
      kind: fc.constant("settle" as const),
      key,
      state: fc.constantFrom(
        "succeeded" as const,
        "succeeded" as const,
        "failed" as const,
        "uncertain" as const,
      ),
      text: fc.string({ maxLength: 12 }),
      late: fc.boolean(),
      holdMs: fc.constantFrom(0, 0, 20, 90),
    }),
  },
  { weight: 20, arbitrary: fc.record({ kind: fc.constant("read" as const), key }) },
  {
    weight: 20,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      ms: fc.integer({ min: 1, max: 30 }),
    }),
  },
  // Now and then past a long retention, once the churn has piled stale slots up behind it.
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      ms: fc.integer({ min: 500, max: 5_000 }),
    }),
  },
);

/**
 * An entry as read, its holder's lease aside: the lease a pending entry names is pinned by the
 * store contract; here, only that no settled entry names one.
 */
function withoutLease(entry: LedgerEntry | undefined): LedgerEntry | undefined {
  if (entry?.leaseMs === undefined && entry?.claimedAt === undefined) return entry;
  expect(entry.state).toBe("pending");
  const { leaseMs: _lease, claimedAt: _claim, ...rest } = entry;
  return rest;
}

describe("memory store ledger against a plain model", () => {
  it("answers every claim and reads every entry as the model does, over long runs", () => {
    let claimed = 0;
    let dropped = 0;
    let full = 0;
    let released = 0;
    let keptUnsettled = 0;
    let heldOut = 0;
    let heldKept = 0;
    fc.assert(
      fc.property(
        fc.record({
          retentionMs: fc.integer({ min: 10, max: 5_000 }),
          maxUnsettled: fc.integer({ min: 1, max: KEYS }),
          maxEntries: fc.integer({ min: 2, max: KEYS }),
          budget: fc.integer({ min: 10, max: 80 }),
        }),
        fc.array(op, { minLength: 200, maxLength: 1_500 }),
        ({ retentionMs, maxUnsettled, maxEntries, budget }, ops) => {
          let t = 1_000;
          const store = createMemoryStore({
            retentionMs,
            maxUnsettled,
            maxLedgerEntries: maxEntries,
            maxResultBytes: budget,
            now: () => t,
          });
          const model = createModel(retentionMs, maxUnsettled, maxEntries, budget);
          // Each key's last claim's mark (a late settle names an older one).
          const claims = new Map<string, number>();
          for (const o of ops) {
            if (o.kind === "tick") {
              t += o.ms;
              continue;
            }
            if (o.kind === "release") {
              store.release(o.owner);
              const count = model.release(o.owner);
              released += count.dropped;
              keptUnsettled += count.kept;
              for (let k = 0; k < KEYS; k++) {
                expect(withoutLease(store.entry(`k${k}`)), `entry k${k}`).toEqual(
                  model.entry(`k${k}`, t),
                );
              }
              continue;
            }
            const key = `k${o.key}`;
            if (o.kind === "claim") {
              const hash = `h${o.hash}`;
              const last = claims.get(key);
              const handedOver =
                o.handedOver === "none" || last === undefined
                  ? undefined
                  : last - (o.handedOver === "own" ? 0 : 1);
              const got: ClaimResult = store.claim(key, hash, {
                now: t,
                allowUncertain: o.allow,
                leaseMs: o.lease,
                owner: o.owner,
                handedOver,
              });
              expect(got, `claim ${key}`).toEqual(
                model.claim(key, hash, t, t, o.allow, o.lease, o.owner, handedOver),
              );
              if (got.status === "in_flight" && got.entry.state === "failed") heldOut++;
              if (got.status === "ledger_full") full++;
              if (got.status === "claimed") {
                claimed++;
                claims.set(key, got.claimedAt as number);
              }
            } else if (o.kind === "settle") {
              const claimedAt = o.late ? (claims.get(key) ?? t) - 1 : claims.get(key);
              const result = o.state === "succeeded" ? { t: o.text } : undefined;
              store.settle(key, o.state, {
                now: t,
                ...(result !== undefined && { result }),
                ...(claimedAt !== undefined && { claimedAt }),
                ...(o.holdMs > 0 && { holdMs: o.holdMs }),
              });
              model.settle(
                key,
                o.state,
                t,
                t,
                result && JSON.stringify(result),
                claimedAt,
                o.holdMs,
              );
            }
            // Only the key the step touched is read: a read drops an expired entry, and the
            // others' must go through the settle order.
            const expected = model.entry(key, t);
            if (expected === undefined) dropped++;
            expect(withoutLease(store.entry(key)), `entry ${key}`).toEqual(expected);
          }
          heldKept += model.heldKept();
        },
      ),
      // A failing run is long: reported as found, not shrunk.
      { numRuns: 150, endOnFailure: true },
    );
    // Keys were claimed, and entries expired or were never made.
    expect(claimed).toBeGreaterThan(1_000);
    expect(dropped).toBeGreaterThan(1_000);
    expect(full).toBeGreaterThan(100);
    // Releases dropped settled entries and kept pending or uncertain ones.
    expect(released).toBeGreaterThan(25);
    expect(keptUnsettled).toBeGreaterThan(60);
    // Holds kept claims out, and the cap passed over held entries.
    expect(heldOut).toBeGreaterThan(5);
    expect(heldKept).toBeGreaterThan(5);
  });
});
