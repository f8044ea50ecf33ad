import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GovernorError } from "../errors.ts";
import type {
  AddOutcomeOptions,
  ClaimOptions,
  ClaimResult,
  LedgerEntry,
  Store,
} from "../store/store.ts";

/** What the contract asks of a store factory for one test. */
export interface StoreFactoryOptions {
  /**
   * How long settled (`succeeded` / `failed`) ledger entries must be kept, in ms.
   * @default 86_400_000 (tests of retention pass 30)
   */
  readonly retentionMs: number;
  /**
   * The hard cap of unsettled (`pending` / `uncertain`) ledger entries.
   * @default 10_000 (the test of the cap passes 3)
   */
  readonly maxUnsettled: number;
  /**
   * The most learned records (`addOutcome`) the store keeps.
   * @default 10_000 (the test of the cap passes 3)
   */
  readonly maxOutcomes: number;
}

/** Options of {@link describeStoreContract}. */
export interface StoreContractOptions {
  /**
   * Called after each test with every store that test made (close a connection, delete keys).
   * @default no cleanup
   */
  readonly cleanup?: (store: Store) => Promise<void> | void;
}

const DEFAULTS: StoreFactoryOptions = {
  retentionMs: 86_400_000,
  maxUnsettled: 10_000,
  maxOutcomes: 10_000,
};
const LEASE_MS = 1_000;
/**
 * The lease of the tests where a lease passes. Those wait for it in real time and pass
 * `Date.now()`: a store may run leases on its own clock (a shared store on its server's, so that
 * workers whose clocks disagree cannot take over a key in flight), so a later `now` alone does not
 * make a lease pass.
 */
const BRIEF_LEASE_MS = 40;
/** A hold (`SettleOptions.holdMs`) short enough to wait out: counted by the store's own clock. */
const HOLD_MS = 300;

/**
 * An entry with the lease left (`leaseLeftMs`, from a store that counts leases on its own clock)
 * checked to lie within the holder's lease, then set aside: the rest is compared whole.
 */
function leaseAside(entry: LedgerEntry | undefined): LedgerEntry | undefined {
  if (entry?.leaseLeftMs === undefined) return entry;
  const { leaseLeftMs, ...rest } = entry;
  expect(leaseLeftMs).toBeGreaterThanOrEqual(0);
  expect(leaseLeftMs).toBeLessThanOrEqual(entry.leaseMs ?? 0);
  return rest;
}

/**
 * `entry` without its `claimedAt`, checked to be `mark` where the store names one (a store that
 * keeps no claim marks names none: `LedgerEntry.claimedAt` is optional).
 */
function claimAside(entry: LedgerEntry | undefined, mark: number): LedgerEntry | undefined {
  if (entry?.claimedAt === undefined) return entry;
  const { claimedAt, ...rest } = entry;
  expect(claimedAt).toBe(mark);
  return rest;
}

/** The store's mark of a `claimed` answer (`ClaimResult.claimedAt`), checked to be a number. */
function markOf(result: ClaimResult): number {
  expect(result.status).toBe("claimed");
  const mark = result.status === "claimed" ? result.claimedAt : undefined;
  expect(typeof mark).toBe("number");
  return mark as number;
}

/**
 * Registers the vitest suite every {@link Store} must pass: values with expiry, atomic counters,
 * and the idempotency ledger (claim, args mismatch, replay, re-claim after failure, uncertain
 * refusal, `retaken` on a claim that took over a write in doubt, expired leases, each claim's
 * mark (`claimedAt`) and late settles from a claim that is no longer the key's, concurrent
 * claims, settling by hand, retention, the fail-closed cap, values JSON cannot write refused with
 * JSON's own error),
 * and the learned outcome records (decayed additions, atomicity, expiry, listing, reset, the cap).
 * The learning methods are optional on {@link Store}, but a store that runs this suite must have
 * them.
 *
 * `makeStore` is called once or more per test. Each store it returns must count unsettled entries
 * on its own (for a shared server: give each one a fresh key prefix), so that the cap test sees
 * only its own entries. Tests use unique keys, so stores may share a server. Three tests wait for
 * real time (at most 80 ms each) since a server's expiry follows its own clock, and the tests of
 * expired leases wait for real leases to pass (40 ms; one holds a 2 s lease): a store may run
 * leases on its own clock rather than on the `now` its callers pass.
 *
 * Requires vitest (an optional peer dependency of `@governor/core`).
 *
 * @example
 * import { describeStoreContract } from "@governor/core/testing";
 * describeStoreContract("MyStore", (o) => createMyStore({ retentionMs: o.retentionMs, maxUnsettled: o.maxUnsettled }));
 */
export function describeStoreContract(
  name: string,
  makeStore: (options: StoreFactoryOptions) => Store | Promise<Store>,
  options: StoreContractOptions = {},
): void {
  describe(`Store contract: ${name}`, () => {
    const opened: Store[] = [];
    let prefix = "";
    const key = (suffix: string) => `${prefix}${suffix}`;
    async function open(overrides: Partial<StoreFactoryOptions> = {}): Promise<Store> {
      const store = await makeStore({ ...DEFAULTS, ...overrides });
      opened.push(store);
      return store;
    }
    const at = (now: number, allowUncertain = false): ClaimOptions => ({
      now,
      allowUncertain,
      leaseMs: LEASE_MS,
    });
    const brief = (now: number, allowUncertain = false): ClaimOptions => ({
      now,
      allowUncertain,
      leaseMs: BRIEF_LEASE_MS,
    });

    beforeEach(() => {
      prefix = `contract:${randomUUID()}:`;
    });
    afterEach(async () => {
      for (const store of opened.splice(0)) await options.cleanup?.(store);
    });

    describe("values", () => {
      it("reads back what was written, as a copy, and undefined for a missing key", async () => {
        const store = await open();
        expect(await store.get(key("missing"))).toBeUndefined();
        const value = { a: 1, nested: { list: [1, "two", null, true] }, text: "é\n\u0000" };
        await store.set(key("v"), value);
        const read = await store.get<typeof value>(key("v"));
        expect(read).toEqual(value);
        if (read !== undefined) read.nested.list.push(4);
        expect(await store.get(key("v"))).toEqual(value);
        await store.set(key("v"), 7);
        expect(await store.get(key("v"))).toBe(7);
      });

      it("expires values and counters after their ttl, and keeps the others", async () => {
        const store = await open();
        // No read before the wait: on a loaded machine 20 ms may pass before it (presence is
        // checked with long ttls).
        await store.set(key("short"), "gone", 20);
        await store.set(key("long"), "kept", 60_000);
        await store.set(key("forever"), "kept");
        await store.set(key("rewritten"), "kept", 20);
        await store.set(key("rewritten"), "kept");
        expect(await store.increment(key("counter"), 1, 20)).toBe(1);
        await sleep(80);
        expect(await store.get(key("short"))).toBeUndefined();
        expect(await store.get(key("long"))).toBe("kept");
        expect(await store.get(key("forever"))).toBe("kept");
        expect(await store.get(key("rewritten"))).toBe("kept");
        expect(await store.increment(key("counter"), 1, 20)).toBe(1);
      });
    });

    describe("counters", () => {
      it("start at 0, add any safe integer, and read back as numbers", async () => {
        const store = await open();
        expect(await store.increment(key("c"), 5, 60_000)).toBe(5);
        expect(await store.increment(key("c"), -2, 60_000)).toBe(3);
        expect(await store.increment(key("c"), 0, 60_000)).toBe(3);
        expect(await store.get(key("c"))).toBe(3);
      });

      it("count 200 concurrent increments exactly once each", async () => {
        const store = await open();
        const results = await Promise.all(
          Array.from({ length: 200 }, () => store.increment(key("race"), 1, 60_000)),
        );
        expect(await store.get(key("race"))).toBe(200);
        expect([...results].sort((a, b) => a - b)).toEqual(
          Array.from({ length: 200 }, (_, i) => i + 1),
        );
      });
    });

    describe("ledger", () => {
      it("claims a new key as pending, separately from values of the same name", async () => {
        const store = await open();
        await store.set(key("k"), "a value");
        const result = await store.claim(key("k"), "h1", at(1_000));
        expect(result).toEqual({
          status: "claimed",
          entry: { key: key("k"), argsHash: "h1", state: "pending", updatedAt: 1_000 },
          claimedAt: markOf(result),
        });
        // A pending entry names its holder's lease: until it runs out the call may be in flight.
        // And its claim, where the store keeps one.
        expect(claimAside(leaseAside(await store.entry(key("k"))), markOf(result))).toEqual({
          key: key("k"),
          argsHash: "h1",
          state: "pending",
          updatedAt: 1_000,
          leaseMs: LEASE_MS,
        });
        expect(await store.get(key("k"))).toBe("a value");
        expect(await store.entry(key("other"))).toBeUndefined();
      });

      it("refuses a second use while the lease holds, and other arguments always", async () => {
        const store = await open();
        await store.claim(key("k"), "h1", at(1_000));
        const again = await store.claim(key("k"), "h1", at(1_000 + LEASE_MS - 1, true));
        expect(again.status).toBe("in_flight");
        const other = await store.claim(key("k"), "h2", at(1_001));
        expect(other).toEqual({
          status: "args_mismatch",
          entry: { key: key("k"), argsHash: "h1", state: "pending", updatedAt: 1_000 },
        });
      });

      it("replays a succeeded key's result and never runs it again", async () => {
        const store = await open();
        await store.claim(key("k"), "h1", at(1_000));
        const result = { content: [{ type: "text", text: "charged" }], id: 42, ok: true };
        await store.settle(key("k"), "succeeded", { now: 1_500, result });
        const replay = await store.claim(key("k"), "h1", at(2_000, true));
        expect(replay).toEqual({
          status: "succeeded",
          entry: { key: key("k"), argsHash: "h1", state: "succeeded", result, updatedAt: 1_500 },
        });
        expect((await store.claim(key("k"), "h2", at(2_000))).status).toBe("args_mismatch");
        await store.claim(key("bare"), "h1", at(1_000));
        await store.settle(key("bare"), "succeeded", { now: 1_100 });
        expect(await store.entry(key("bare"))).toEqual({
          key: key("bare"),
          argsHash: "h1",
          state: "succeeded",
          updatedAt: 1_100,
        });
      });

      it("refuses a value or result JSON cannot write with JSON's own error, writing nothing", async () => {
        const store = await open();
        // A store error says the ledger cannot answer (the host looks at the store); a value that
        // is not JSON is the caller's, and the core settles such a result without it.
        const refusal = async (op: () => unknown) => {
          try {
            await op();
          } catch (error) {
            return error;
          }
          return undefined;
        };
        const unwritable = { amount: 10n };
        const setError = await refusal(() => store.set(key("v"), unwritable));
        expect(setError).toBeInstanceOf(TypeError);
        expect(GovernorError.isInstance(setError)).toBe(false);
        expect(await store.get(key("v"))).toBeUndefined();
        await store.claim(key("k"), "h1", at(1_000));
        const settleError = await refusal(() =>
          store.settle(key("k"), "succeeded", { now: 1_500, result: unwritable }),
        );
        expect(settleError).toBeInstanceOf(TypeError);
        expect(GovernorError.isInstance(settleError)).toBe(false);
        expect((await store.entry(key("k")))?.state).toBe("pending");
      });

      it("claims a failed key again (the server answered: no effect)", async () => {
        const store = await open();
        await store.claim(key("k"), "h1", at(1_000));
        await store.settle(key("k"), "failed", { now: 1_100, result: { error: "card declined" } });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        expect((await store.claim(key("k"), "h2", at(1_200))).status).toBe("args_mismatch");
        const again = await store.claim(key("k"), "h1", at(1_200));
        expect(again).toEqual({
          status: "claimed",
          entry: { key: key("k"), argsHash: "h1", state: "pending", updatedAt: 1_200 },
          claimedAt: markOf(again),
        });
        expect((await store.claim(key("k"), "h1", at(1_300))).status).toBe("in_flight");
      });

      it("refuses an uncertain key unless repeating is known to be safe", async () => {
        const store = await open();
        await store.claim(key("k"), "h1", at(1_000));
        await store.settle(key("k"), "uncertain", { now: 1_100 });
        expect(await store.claim(key("k"), "h1", at(5_000))).toEqual({
          status: "uncertain",
          entry: { key: key("k"), argsHash: "h1", state: "uncertain", updatedAt: 1_100 },
        });
        expect((await store.claim(key("k"), "h2", at(5_000, true))).status).toBe("args_mismatch");
        const taken = await store.claim(key("k"), "h1", at(5_001, true));
        expect(taken).toEqual({
          status: "claimed",
          entry: { key: key("k"), argsHash: "h1", state: "pending", updatedAt: 5_001 },
          claimedAt: markOf(taken),
          retaken: true,
        });
        expect((await store.claim(key("k"), "h1", at(5_002, true))).status).toBe("in_flight");
      });

      it("says when a claim took over a write in doubt (retaken), and only then", async () => {
        const store = await open();
        const fresh = await store.claim(key("new"), "h1", at(1_000, true));
        expect(fresh.status).toBe("claimed");
        expect(fresh).not.toHaveProperty("retaken");
        await store.settle(key("new"), "failed", { now: 1_100 });
        const again = await store.claim(key("new"), "h1", at(1_200, true));
        expect(again.status).toBe("claimed");
        expect(again).not.toHaveProperty("retaken");
        // Settled uncertain, then taken over: the attempt that left it may have written.
        await store.settle(key("new"), "uncertain", { now: 1_300 });
        const over = await store.claim(key("new"), "h1", at(1_400, true));
        expect(over).toMatchObject({ status: "claimed", retaken: true });
        // The same key settled failed by its new holder is free again, not in doubt.
        await store.settle(key("new"), "failed", { now: 1_500, claimedAt: markOf(over) });
        const freed = await store.claim(key("new"), "h1", at(1_600, true));
        expect(freed).not.toHaveProperty("retaken");
        // A pending entry past its lease, taken over at once or after a refusal marked it uncertain.
        await store.claim(key("stale"), "h1", brief(Date.now()));
        await store.claim(key("marked"), "h1", brief(Date.now()));
        await sleep(2 * BRIEF_LEASE_MS);
        expect(await store.claim(key("stale"), "h1", brief(Date.now(), true))).toMatchObject({
          status: "claimed",
          retaken: true,
        });
        expect((await store.claim(key("marked"), "h1", brief(Date.now()))).status).toBe(
          "uncertain",
        );
        expect(await store.claim(key("marked"), "h1", brief(Date.now(), true))).toMatchObject({
          status: "claimed",
          retaken: true,
        });
        // A key a host settled by hand as failed is not in doubt.
        await store.settle(key("by-hand"), "failed", { now: 1_000 });
        expect(await store.claim(key("by-hand"), "h1", at(1_100, true))).not.toHaveProperty(
          "retaken",
        );
      });

      it("treats a pending key whose lease expired as uncertain, and records that", async () => {
        const store = await open();
        await store.claim(key("k"), "h1", brief(Date.now()));
        await store.claim(key("k2"), "h1", brief(Date.now()));
        await sleep(2 * BRIEF_LEASE_MS);
        const stale = Date.now();
        expect(await store.claim(key("k"), "h1", brief(stale))).toEqual({
          status: "uncertain",
          entry: { key: key("k"), argsHash: "h1", state: "uncertain", updatedAt: stale },
        });
        expect((await store.entry(key("k")))?.state).toBe("uncertain");
        expect((await store.claim(key("k"), "h1", brief(stale + 1, true))).status).toBe("claimed");

        const later = Date.now();
        const taken = await store.claim(key("k2"), "h1", brief(later, true));
        expect(taken).toEqual({
          status: "claimed",
          entry: { key: key("k2"), argsHash: "h1", state: "pending", updatedAt: later },
          claimedAt: markOf(taken),
          retaken: true,
        });
      });

      it("issue 8.5: a pending entry whose lease expired stays uncertain, never free to claim", async () => {
        const store = await open();
        // The holder wrote, then its settle failed (or it crashed): the entry stays pending.
        await store.claim(key("k"), "h1", brief(Date.now()));
        await sleep(2 * BRIEF_LEASE_MS);
        for (const later of [0, 10 * BRIEF_LEASE_MS, 86_400_000]) {
          const again = await store.claim(key("k"), "h1", brief(Date.now() + later));
          expect(again.status).toBe("uncertain");
          expect((await store.entry(key("k")))?.state).toBe("uncertain");
        }
        expect(await store.claim(key("k"), "h2", brief(Date.now()))).toMatchObject({
          status: "args_mismatch",
        });
        // Only a claim that knows repeating is safe (the server honors keys, or a verify step
        // said the effect is absent) may take it.
        expect((await store.claim(key("k"), "h1", brief(Date.now(), true))).status).toBe("claimed");
      });

      it("issue 8.5: the holder's lease holds, whatever shorter lease a later claimer passes", async () => {
        const store = await open();
        const holderLeaseMs = 50 * BRIEF_LEASE_MS;
        const long = { now: Date.now(), allowUncertain: false, leaseMs: holderLeaseMs };
        expect((await store.claim(key("k"), "h1", long)).status).toBe("claimed");
        // The lease began at or before the answer (on the store's clock, perhaps after `now`).
        const answered = Date.now();
        // A claimer with a brief lease (a run with a short deadline), once its own lease would
        // have passed: the holder's attempt may still be running, so the key is in flight.
        await sleep(2 * BRIEF_LEASE_MS);
        expect((await store.claim(key("k"), "h1", brief(Date.now(), true))).status).toBe(
          "in_flight",
        );
        expect((await store.claim(key("k"), "h1", brief(Date.now()))).status).toBe("in_flight");
        expect((await store.entry(key("k")))?.state).toBe("pending");
        await sleep(answered + holderLeaseMs + BRIEF_LEASE_MS - Date.now());
        expect((await store.claim(key("k"), "h1", brief(Date.now()))).status).toBe("uncertain");
      });

      it("issue 8.5: a late settle from an expired holder does not free another holder's claim", async () => {
        const store = await open();
        // A claimed, its lease expired, and B (allowed to repeat: the server honors keys) took it.
        const a = markOf(await store.claim(key("k"), "h1", brief(Date.now())));
        await sleep(2 * BRIEF_LEASE_MS);
        const b = Date.now() + 1;
        const claimB = markOf(await store.claim(key("k"), "h1", brief(b, true)));
        expect(claimB).not.toBe(a);
        // A's answer arrives late: a failure. B may still be running, so the key stays B's.
        await store.settle(key("k"), "failed", { now: b + 100, claimedAt: a });
        await store.settle(key("k"), "uncertain", { now: b + 100, claimedAt: a });
        expect(claimAside(leaseAside(await store.entry(key("k"))), claimB)).toEqual({
          key: key("k"),
          argsHash: "h1",
          state: "pending",
          updatedAt: b,
          leaseMs: BRIEF_LEASE_MS,
        });
        // (Held for a claimer with a 1 s lease, whether or not B's brief one has passed.)
        expect((await store.claim(key("k"), "h1", at(b + 200))).status).toBe("in_flight");
        // B's own settle applies; so would a success from A (the write happened).
        await store.settle(key("k"), "failed", { now: b + 300, claimedAt: claimB });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        expect((await store.claim(key("k"), "h1", at(b + 400))).status).toBe("claimed");
        await store.settle(key("k"), "succeeded", { now: b + 500, claimedAt: a, result: 1 });
        expect((await store.claim(key("k"), "h1", at(b + 600))).status).toBe("succeeded");
      });

      it("a settle from an old claim after a takeover is dropped, whatever the new holder settled", async () => {
        const store = await open();
        // A claimed, its lease ran out, and B took the key over, sent, and settled it: in doubt
        // (its answer lost), or failed (refused before any effect).
        for (const [name, settledB] of [
          ["doubt", "uncertain"],
          ["refused", "failed"],
        ] as const) {
          const a = markOf(await store.claim(key(name), "h1", brief(Date.now())));
          await sleep(2 * BRIEF_LEASE_MS);
          const b = markOf(await store.claim(key(name), "h1", brief(Date.now(), true)));
          await store.settle(key(name), settledB, { now: Date.now(), claimedAt: b });
          // A's late settles (its judging outlived its lease) change nothing B left.
          await store.settle(key(name), "failed", { now: Date.now(), claimedAt: a });
          await store.settle(key(name), "uncertain", { now: Date.now(), claimedAt: a });
          expect((await store.entry(key(name)))?.state).toBe(settledB);
        }
        // B's write stays in doubt: the same key is refused, not sent again.
        expect((await store.claim(key("doubt"), "h1", at(Date.now()))).status).toBe("uncertain");
        // A claim refused (it found the lease run out and marked the key uncertain) takes nothing:
        // the holder's own late settle still applies.
        const held = markOf(await store.claim(key("held"), "h1", brief(Date.now())));
        await sleep(2 * BRIEF_LEASE_MS);
        expect((await store.claim(key("held"), "h1", brief(Date.now()))).status).toBe("uncertain");
        await store.settle(key("held"), "failed", { now: Date.now(), claimedAt: held });
        expect((await store.entry(key("held")))?.state).toBe("failed");
        // A claim after that is a new claim: the old holder's settle no longer applies.
        const next = markOf(await store.claim(key("held"), "h1", at(Date.now())));
        expect(next).not.toBe(held);
        await store.settle(key("held"), "uncertain", { now: Date.now(), claimedAt: held });
        expect((await store.entry(key("held")))?.state).toBe("pending");
      });

      it("a late failed or uncertain settle does not demote a key settled succeeded since", async () => {
        const store = await open();
        // A claimed; a person (no claimedAt) found the write made while A was still judging.
        const a = markOf(await store.claim(key("k"), "h1", at(1_000)));
        await store.settle(key("k"), "succeeded", { now: 1_100 });
        await store.settle(key("k"), "uncertain", { now: 1_200, claimedAt: a });
        await store.settle(key("k"), "failed", { now: 1_300, claimedAt: a });
        expect((await store.entry(key("k")))?.state).toBe("succeeded");
        expect((await store.claim(key("k"), "h1", at(1_400))).status).toBe("succeeded");
        // A person may still correct it by hand; the success ended A's claim, so A's late
        // settle does not mark the key again.
        await store.settle(key("k"), "failed", { now: 1_500 });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        await store.settle(key("k"), "uncertain", { now: 1_600, claimedAt: a });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        // A claim after it is a new one, its settles apply.
        const c = markOf(await store.claim(key("k"), "h1", at(1_700)));
        expect(c).not.toBe(a);
        await store.settle(key("k"), "uncertain", { now: 1_800, claimedAt: c });
        expect((await store.entry(key("k")))?.state).toBe("uncertain");
      });

      it("a person's failed does not end a claim: the holder's late settle still records what it found", async () => {
        const store = await open();
        const a = markOf(await store.claim(key("k"), "h1", brief(Date.now())));
        await sleep(2 * BRIEF_LEASE_MS);
        // Past the lease a person found nothing written; the attempt then answers: in doubt.
        await store.settle(key("k"), "failed", { now: Date.now() });
        await store.settle(key("k"), "uncertain", { now: Date.now(), claimedAt: a });
        expect((await store.entry(key("k")))?.state).toBe("uncertain");
      });

      it("a settle ifSucceeded applies only to the succeeded entry with that result", async () => {
        const store = await open();
        const first = { answer: "one", id: 1 };
        const second = { answer: "two", id: 2 };
        await store.settle(key("k"), "succeeded", { now: 1_000, result: first });
        const read = await store.claim(key("k"), "h1", at(1_100));
        expect(read).toMatchObject({ status: "succeeded", entry: { result: first } });
        const seen = read.status === "succeeded" ? read.entry.result : undefined;
        // Another success was settled since: freeing what the caller read must not free it.
        await store.settle(key("k"), "succeeded", { now: 1_200, result: second });
        await store.settle(key("k"), "failed", { now: 1_300, ifSucceeded: { result: seen } });
        expect(await store.entry(key("k"))).toMatchObject({ state: "succeeded", result: second });
        // The entry the caller read is freed.
        await store.settle(key("k"), "failed", { now: 1_400, ifSucceeded: { result: second } });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        // Not succeeded (failed, pending, uncertain, absent): dropped.
        await store.settle(key("k"), "uncertain", { now: 1_500, ifSucceeded: { result: second } });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        const c = markOf(await store.claim(key("k"), "h1", at(1_600)));
        await store.settle(key("k"), "failed", { now: 1_700, ifSucceeded: {} });
        expect((await store.entry(key("k")))?.state).toBe("pending");
        await store.settle(key("k"), "uncertain", { now: 1_800, claimedAt: c });
        await store.settle(key("k"), "failed", { now: 1_900, ifSucceeded: {} });
        expect((await store.entry(key("k")))?.state).toBe("uncertain");
        await store.settle(key("none"), "failed", { now: 2_000, ifSucceeded: {} });
        expect(await store.entry(key("none"))).toBeUndefined();
        // A success that recorded no result is met by a condition that names none, not by one
        // that names a result; and one with a result is not met by a condition that names none.
        await store.settle(key("bare"), "succeeded", { now: 2_100 });
        await store.settle(key("bare"), "failed", { now: 2_200, ifSucceeded: { result: first } });
        expect((await store.entry(key("bare")))?.state).toBe("succeeded");
        await store.settle(key("bare"), "failed", { now: 2_300, ifSucceeded: {} });
        expect((await store.entry(key("bare")))?.state).toBe("failed");
        await store.settle(key("kept"), "succeeded", { now: 2_400, result: first });
        await store.settle(key("kept"), "failed", { now: 2_500, ifSucceeded: {} });
        expect((await store.entry(key("kept")))?.state).toBe("succeeded");
      });

      it("a failed settle with holdMs holds the key for its claim: in_flight until it runs out, or for a claimer naming that claim handed over", async () => {
        const store = await open();
        const a = markOf(await store.claim(key("k"), "h1", at(Date.now())));
        await store.settle(key("k"), "failed", { now: Date.now(), claimedAt: a, holdMs: HOLD_MS });
        expect((await store.entry(key("k")))?.state).toBe("failed");
        // Its holder may still keep an answer there: nobody else claims it meanwhile.
        expect((await store.claim(key("k"), "h1", at(Date.now()))).status).toBe("in_flight");
        expect(
          (await store.claim(key("k"), "h1", { ...at(Date.now()), handedOver: a + 1 })).status,
        ).toBe("in_flight");
        // The holder itself, or its process once the answer was handed over, claims it as free.
        const b = markOf(await store.claim(key("k"), "h1", { ...at(Date.now()), handedOver: a }));
        expect(b).not.toBe(a);
        // A hold is its claim's: naming another claim passes nothing.
        await store.settle(key("k"), "failed", { now: Date.now(), claimedAt: b, holdMs: HOLD_MS });
        expect(
          (await store.claim(key("k"), "h1", { ...at(Date.now()), handedOver: a })).status,
        ).toBe("in_flight");
        // Any later settle ends it (here a person's).
        await store.settle(key("k"), "failed", { now: Date.now() });
        const c = markOf(await store.claim(key("k"), "h1", at(Date.now())));
        // It runs out by itself, never holding the key for good.
        await store.settle(key("k"), "failed", { now: Date.now(), claimedAt: c, holdMs: HOLD_MS });
        expect((await store.claim(key("k"), "h1", at(Date.now()))).status).toBe("in_flight");
        await sleep(HOLD_MS + 50);
        expect((await store.claim(key("k"), "h1", at(Date.now()))).status).toBe("claimed");
        // A settle that names no claim holds nothing.
        await store.settle(key("n"), "failed", { now: Date.now(), holdMs: HOLD_MS });
        expect((await store.claim(key("n"), "h1", at(Date.now()))).status).toBe("claimed");
      });

      it("a failed settle with holdMs holds nothing when it frees no claim of the store's (the key absent: never claimed, or forgotten)", async () => {
        const store = await open();
        const named = Date.now();
        // A settle naming a claim on a key the store holds no entry for creates it as a settle by
        // hand does: no claim of the key's is freed, so there is none for a hold to keep, and no
        // claimer could name one to pass it.
        for (const [suffix, handedOver] of [
          ["none", undefined],
          ["named", named],
          ["other", named + 1],
        ] as const) {
          const k = key(suffix);
          await store.settle(k, "failed", { now: Date.now(), claimedAt: named, holdMs: HOLD_MS });
          expect((await store.entry(k))?.state).toBe("failed");
          expect((await store.claim(k, "h1", { ...at(Date.now()), handedOver })).status).toBe(
            "claimed",
          );
        }
        // Nor when the entry it names is past its retention: it is forgotten, as a claim finds it.
        const forgets = await open({ retentionMs: 30 });
        const a = markOf(await forgets.claim(key("gone"), "h1", at(Date.now())));
        await forgets.settle(key("gone"), "failed", { now: Date.now(), claimedAt: a });
        await sleep(80);
        await forgets.settle(key("gone"), "failed", {
          now: Date.now(),
          claimedAt: a,
          holdMs: HOLD_MS,
        });
        expect((await forgets.claim(key("gone"), "h1", at(Date.now()))).status).toBe("claimed");
      });

      it("a failed entry held for its claim (holdMs) is kept until the hold runs out, even past a shorter retention", async () => {
        const store = await open({ retentionMs: 30 });
        const a = markOf(await store.claim(key("k"), "h1", at(Date.now())));
        await store.settle(key("k"), "failed", { now: Date.now(), claimedAt: a, holdMs: HOLD_MS });
        await sleep(80);
        // Forgotten with the retention, the entry would be free while its holder may still keep
        // an answer there.
        expect((await store.claim(key("k"), "h1", at(Date.now()))).status).toBe("in_flight");
        // A held entry reads as the failed entry it is: a settled entry has no lease.
        const held = await store.entry(key("k"));
        expect(held?.state).toBe("failed");
        expect(held?.leaseMs).toBeUndefined();
        await sleep(HOLD_MS);
        expect((await store.claim(key("k"), "h1", at(Date.now()))).status).toBe("claimed");
      });

      it("issue 8.6: keeps a settled entry through any amount of other traffic", async () => {
        const store = await open();
        await store.claim(key("charge"), "h1", at(1_000));
        await store.settle(key("charge"), "succeeded", { now: 1_100, result: "ch_1" });
        // More values and counters (breaker state, retry budgets) than a small cache holds.
        for (let batch = 0; batch < 24; batch++) {
          await Promise.all(
            Array.from({ length: 500 }, (_, i) => {
              const n = batch * 500 + i;
              return n % 2 === 0
                ? store.increment(key(`c${n}`), 1, 60_000)
                : store.set(key(`v${n}`), { n }, 60_000);
            }),
          );
        }
        expect(await store.claim(key("charge"), "h1", at(2_000))).toEqual({
          status: "succeeded",
          entry: {
            key: key("charge"),
            argsHash: "h1",
            state: "succeeded",
            result: "ch_1",
            updatedAt: 1_100,
          },
        });
      });

      it("gives a key to exactly one of 50 concurrent claims", async () => {
        const store = await open();
        const results = await Promise.all(
          Array.from({ length: 50 }, () => store.claim(key("k"), "h1", at(1_000, true))),
        );
        const statuses = results.map((r) => r.status);
        expect(statuses.filter((s) => s === "claimed")).toHaveLength(1);
        expect(statuses.filter((s) => s === "in_flight")).toHaveLength(49);
      });

      it("lets a host settle a key it never claimed, matching any arguments", async () => {
        const store = await open();
        await store.settle(key("done"), "succeeded", { now: 1_000, result: "receipt" });
        expect(await store.entry(key("done"))).toEqual({
          key: key("done"),
          argsHash: "",
          state: "succeeded",
          result: "receipt",
          updatedAt: 1_000,
        });
        const replay = await store.claim(key("done"), "any", at(2_000));
        expect(replay.status).toBe("succeeded");

        await store.settle(key("unsure"), "uncertain", { now: 1_000 });
        expect((await store.claim(key("unsure"), "h1", at(2_000))).status).toBe("uncertain");
        await store.settle(key("unsure"), "failed", { now: 2_100 });
        const claimed = await store.claim(key("unsure"), "h1", at(2_200));
        expect(claimed).toEqual({
          status: "claimed",
          entry: { key: key("unsure"), argsHash: "h1", state: "pending", updatedAt: 2_200 },
          claimedAt: markOf(claimed),
        });
      });

      it("lets a host settle an uncertain key it checked by hand", async () => {
        const store = await open();
        await store.claim(key("k"), "h1", at(1_000));
        await store.settle(key("k"), "uncertain", { now: 1_100 });
        await store.settle(key("k"), "succeeded", { now: 9_000, result: { found: true } });
        const replay = await store.claim(key("k"), "h1", at(9_500));
        expect(replay).toEqual({
          status: "succeeded",
          entry: {
            key: key("k"),
            argsHash: "h1",
            state: "succeeded",
            result: { found: true },
            updatedAt: 9_000,
          },
        });
      });

      it("forgets settled entries after the retention, and never unsettled ones", async () => {
        const store = await open({ retentionMs: 30 });
        for (const name of ["succeeded", "failed", "uncertain", "pending"] as const) {
          await store.claim(key(name), "h1", at(1_000));
          if (name !== "pending") await store.settle(key(name), name, { now: 1_100 });
        }
        await sleep(80);
        expect(await store.entry(key("succeeded"))).toBeUndefined();
        expect(await store.entry(key("failed"))).toBeUndefined();
        expect((await store.entry(key("uncertain")))?.state).toBe("uncertain");
        expect((await store.entry(key("pending")))?.state).toBe("pending");
        expect((await store.claim(key("succeeded"), "h2", at(2_000))).status).toBe("claimed");
      });

      it("release(owner) lets only that owner's settled entries go; claims with an owner answer as without", async () => {
        const store = await open();
        const owned = (now: number, owner: string | undefined): ClaimOptions => ({
          ...at(now),
          owner,
        });
        const states = ["succeeded", "failed", "uncertain", "pending"] as const;
        let pendingMark = 0;
        for (const owner of ["o1", "o2", undefined]) {
          for (const name of states) {
            const k = key(`${owner ?? "none"}:${name}`);
            const mark = markOf(await store.claim(k, "h1", owned(1_000, owner)));
            if (name === "pending" && owner === "o1") pendingMark = mark;
            if (name !== "pending") {
              await store.settle(k, name, {
                now: 1_100,
                claimedAt: mark,
                ...(name === "succeeded" && { result: { ok: name } }),
              });
            }
          }
        }
        // A key settled by hand (never claimed) has no owner.
        await store.settle(key("o1:by-hand"), "succeeded", { now: 1_100 });
        await store.release?.("o1");
        // The released owner's writes in doubt stay as they were, for a person to settle.
        expect((await store.entry(key("o1:uncertain")))?.state).toBe("uncertain");
        expect((await store.entry(key("o1:pending")))?.state).toBe("pending");
        expect((await store.claim(key("o1:pending"), "h1", owned(1_200, "o1"))).status).toBe(
          "in_flight",
        );
        // Its settled entries may go (a store without release keeps them): never changed.
        for (const name of ["succeeded", "failed"] as const) {
          const entry = await store.entry(key(`o1:${name}`));
          if (entry !== undefined) expect(entry.state).toBe(name);
        }
        // Every other owner's entries, and those of none, stay.
        for (const owner of ["o2", "none"]) {
          for (const name of states) {
            expect((await store.entry(key(`${owner}:${name}`)))?.state).toBe(name);
          }
          expect(await store.claim(key(`${owner}:succeeded`), "h1", at(1_300))).toMatchObject({
            status: "succeeded",
            entry: { result: { ok: "succeeded" } },
          });
        }
        expect((await store.entry(key("o1:by-hand")))?.state).toBe("succeeded");
        // A write of the released owner that was in flight settles as any other, and stays.
        await store.settle(key("o1:pending"), "succeeded", { now: 1_400, claimedAt: pendingMark });
        expect((await store.entry(key("o1:pending")))?.state).toBe("succeeded");
      });

      it("refuses new keys when the unsettled cap is reached, forgetting nothing", async () => {
        const store = await open({ maxUnsettled: 3 });
        for (const name of ["a", "b", "c"]) {
          expect((await store.claim(key(name), "h1", at(1_000))).status).toBe("claimed");
        }
        expect(await store.claim(key("d"), "h1", at(1_000))).toEqual({ status: "ledger_full" });
        expect((await store.claim(key("a"), "h1", at(1_001))).status).toBe("in_flight");

        await store.settle(key("a"), "failed", { now: 1_100 });
        await store.settle(key("b"), "uncertain", { now: 1_100 });
        expect((await store.claim(key("d"), "h1", at(1_200))).status).toBe("claimed");
        // Re-claiming a failed key makes it unsettled again, so it needs room too.
        expect(await store.claim(key("a"), "h1", at(1_300))).toEqual({ status: "ledger_full" });
        expect(await store.claim(key("e"), "h1", at(1_300))).toEqual({ status: "ledger_full" });
        // An uncertain key already counts: taking it again needs no room.
        expect((await store.claim(key("b"), "h1", at(1_300, true))).status).toBe("claimed");

        await store.settle(key("c"), "succeeded", { now: 1_400 });
        expect((await store.claim(key("e"), "h1", at(1_500))).status).toBe("claimed");
        for (const name of ["b", "d", "e"]) {
          expect((await store.entry(key(name)))?.state).toBe("pending");
        }
      });
    });

    describe("learned outcomes", () => {
      const H = 1_000;
      const add = (now: number, by?: number): AddOutcomeOptions => ({
        now,
        halfLifeMs: H,
        ttlMs: 60_000,
        ...(by !== undefined && { by }),
      });

      it("decays every count to now before adding, and reads the record back as stored", async () => {
        const store = learning(await open());
        expect(await store.outcome(key("r"))).toBeUndefined();
        const first = await store.addOutcome(key("r"), "retry_futile", add(1_000));
        expect(first).toEqual({ key: key("r"), counts: { retry_futile: 1 }, updatedAt: 1_000 });
        // One half-life later: 1 -> 0.5, plus 1.
        await store.addOutcome(key("r"), "retry_futile", add(2_000));
        const third = await store.addOutcome(key("r"), "retry_paid", add(3_000, 2));
        expect(third.updatedAt).toBe(3_000);
        expect(third.counts.retry_futile).toBeCloseTo(0.75, 12);
        expect(third.counts.retry_paid).toBe(2);
        const read = await store.outcome(key("r"));
        expect(read?.updatedAt).toBe(3_000);
        expect(read?.counts.retry_futile).toBeCloseTo(0.75, 12);
        expect(read?.counts.retry_paid).toBe(2);
        // A value and a ledger entry of the same name are other things.
        expect(await store.get(key("r"))).toBeUndefined();
        expect(await store.entry(key("r"))).toBeUndefined();
      });

      it("never grows a count when a worker's clock is behind the record", async () => {
        const store = learning(await open());
        await store.addOutcome(key("skew"), "correct_futile", add(5_000));
        const behind = await store.addOutcome(key("skew"), "correct_futile", add(4_000));
        expect(behind).toEqual({
          key: key("skew"),
          counts: { correct_futile: 2 },
          updatedAt: 5_000,
        });
      });

      it("counts 100 concurrent additions exactly once each", async () => {
        const store = learning(await open());
        await Promise.all(
          Array.from({ length: 100 }, () =>
            store.addOutcome(key("race"), "switch_paid", add(7_000)),
          ),
        );
        expect((await store.outcome(key("race")))?.counts.switch_paid).toBe(100);
      });

      it("expires a record ttlMs after its last addition", async () => {
        const store = learning(await open());
        await store.addOutcome(key("short"), "retry_paid", {
          now: 1_000,
          halfLifeMs: H,
          ttlMs: 20,
        });
        await store.addOutcome(key("long"), "retry_paid", {
          now: 1_000,
          halfLifeMs: H,
          ttlMs: 60_000,
        });
        await sleep(80);
        expect(await store.outcome(key("short"))).toBeUndefined();
        expect((await store.outcome(key("long")))?.counts.retry_paid).toBe(1);
        expect((await store.listOutcomes(10)).map((r) => r.key)).toEqual([key("long")]);
      });

      it("lists the most recently updated first, and resets by key prefix or all", async () => {
        const store = learning(await open());
        await store.addOutcome(key("a/x/1"), "retry_futile", add(1_000));
        await store.addOutcome(key("a/y/2"), "retry_futile", add(3_000));
        await store.addOutcome(key("b/x/3"), "retry_futile", add(2_000));
        expect((await store.listOutcomes(10)).map((r) => r.key)).toEqual([
          key("a/y/2"),
          key("b/x/3"),
          key("a/x/1"),
        ]);
        expect((await store.listOutcomes(2)).map((r) => r.key)).toEqual([
          key("a/y/2"),
          key("b/x/3"),
        ]);
        expect(await store.resetOutcomes(key("a/"))).toBe(2);
        expect(await store.outcome(key("a/x/1"))).toBeUndefined();
        expect((await store.listOutcomes(10)).map((r) => r.key)).toEqual([key("b/x/3")]);
        expect(await store.resetOutcomes(key("a/"))).toBe(0);
        expect(await store.resetOutcomes()).toBe(1);
        expect(await store.listOutcomes(10)).toEqual([]);
      });

      it("keeps at most maxOutcomes records, dropping the least recently updated", async () => {
        const store = learning(await open({ maxOutcomes: 3 }));
        for (const [i, name] of ["a", "b", "c", "d"].entries()) {
          await store.addOutcome(key(name), "retry_futile", add(1_000 + i));
        }
        expect(await store.outcome(key("a"))).toBeUndefined();
        expect((await store.listOutcomes(10)).map((r) => r.key)).toEqual([
          key("d"),
          key("c"),
          key("b"),
        ]);
      });

      it("refuses bad arguments with invalid_options, naming what is accepted", async () => {
        const store = learning(await open());
        const bad: [string, AddOutcomeOptions][] = [
          ["", add(1_000)],
          ["@t", add(1_000)],
          ["retry_paid", add(1_000, 0)],
          ["retry_paid", add(Number.NaN)],
          ["retry_paid", { now: 1_000, halfLifeMs: 0, ttlMs: 1_000 }],
          ["retry_paid", { now: 1_000, halfLifeMs: 1_000, ttlMs: -1 }],
        ];
        for (const [field, options] of bad) {
          const error = await rejection(() => store.addOutcome(key("bad"), field, options));
          expect(GovernorError.isInstance(error) && error.code).toBe("invalid_options");
          expect((error as Error).message).toMatch(/field|by|now|halfLifeMs|ttlMs/);
        }
        const listed = await rejection(() => store.listOutcomes(0));
        expect(GovernorError.isInstance(listed) && listed.code).toBe("invalid_options");
        expect(await store.outcome(key("bad"))).toBeUndefined();
      });
    });
  });
}

type LearningStore = Store &
  Required<Pick<Store, "addOutcome" | "outcome" | "listOutcomes" | "resetOutcomes">>;

/** The store, checked to have the learning methods this suite requires. */
function learning(store: Store): LearningStore {
  for (const name of ["addOutcome", "outcome", "listOutcomes", "resetOutcomes"] as const) {
    if (typeof store[name] !== "function") {
      throw new Error(
        `The store has no ${name} method: the contract requires the learning methods.`,
      );
    }
  }
  return store as LearningStore;
}

/** What a call threw or rejected with (sync or async); fails when it did not. */
async function rejection(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
