import { describe, expect, it } from "vitest";
import { HostError } from "../errors.ts";
import type { PolicyInput } from "../policy/policy.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import { type OutcomeRecord, type Store, StoreError } from "../store/store.ts";
import { createGovernor, type GovernorOptions } from "./governor.ts";
import { type LedgerEvent, ledgerMove } from "./ledger.ts";
import { memoryStoreWith } from "./store-doubles.support.ts";

const clear = { uncertain: false, retaken: false };
const events: LedgerEvent[] = [
  "answered",
  "verified_present",
  "verified_absent",
  "refused",
  "unknown",
  "not_sent",
];

describe("ledgerMove", () => {
  it("moves a claimed key by what the flow learned of its write", () => {
    expect(events.map((e) => [e, ledgerMove(clear, e)])).toEqual([
      ["answered", "succeeded"],
      ["verified_present", "succeeded"],
      ["verified_absent", "failed"],
      ["refused", "failed"],
      ["unknown", "uncertain"],
      ["not_sent", "failed"],
    ]);
  });

  it("keeps a key in doubt when an attempt that sent nothing follows one that may have written", () => {
    expect(ledgerMove({ uncertain: true, retaken: false }, "not_sent")).toBe("uncertain");
    // The claim took over another attempt's write in doubt: that write may have happened.
    expect(ledgerMove({ uncertain: false, retaken: true }, "not_sent")).toBe("uncertain");
  });

  it("moves a key out of doubt only on an answer about the write itself", () => {
    const doubt = { uncertain: true, retaken: true };
    expect(ledgerMove(doubt, "answered")).toBe("succeeded");
    expect(ledgerMove(doubt, "verified_present")).toBe("succeeded");
    expect(ledgerMove(doubt, "verified_absent")).toBe("failed");
    expect(ledgerMove(doubt, "unknown")).toBe("uncertain");
    expect(ledgerMove(doubt, "refused")).toBe("uncertain");
  });
});

/**
 * The flow makes one move per failed attempt (failed-attempt.ts `resolveFailure`): once what the
 * attempt comes to is known, the verify step's answer included, never a first guess settled and
 * then corrected. Each store key (the call's key and its content's entry, doubt.ts) is settled
 * once per attempt, however the call ends, and never left claimed.
 */
describe("a failed attempt's key is settled once, when the decision is known", () => {
  const lost = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
  /** The server refused the connection: nothing was sent. */
  const refused = () =>
    Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
  const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
  const never = () => new Promise<never>(() => {});

  /** A memory store that lists every settle; `failSettles` makes them throw a store error. */
  function countingStore({ failSettles = false } = {}) {
    const memory = createMemoryStore();
    const settles: [key: string, to: string][] = [];
    const store = memoryStoreWith(
      {
        settle: (k, st, o) => {
          settles.push([k, st]);
          if (failSettles) {
            throw new StoreError({ reason: "unavailable", operation: "settle", message: "down" });
          }
          return memory.settle(k, st, o);
        },
      },
      memory,
    );
    /** The moves of each key settled, by key (the call's `gk_`, its content's `gd_`). */
    const byKey = () => {
      const moves = new Map<string, string[]>();
      for (const [k, st] of settles) moves.set(k, [...(moves.get(k) ?? []), st]);
      return [...moves.values()];
    };
    return { memory, store, settles, byKey };
  }

  /** One governed keyed write of `pay`; the keys its attempts were sent with. */
  async function pay(
    options: GovernorOptions,
    policy: PolicyInput["tools"] extends infer T ? T : never,
    execute: (attempt: number) => Promise<unknown>,
    budgets: Record<string, number> = {},
    signal?: AbortSignal,
  ) {
    const governor = createGovernor(
      { tools: policy, budgets, defaults: { retry: { baseDelayMs: 1, maxDelayMs: 2 } } },
      { metrics: false, random: () => 0, ...options },
    );
    const keys: (string | undefined)[] = [];
    const run = governor.startRun();
    const call = run.call(
      { tool: "pay", args: { amount: 1 }, ...(signal !== undefined && { signal }) },
      (ctx) => {
        keys.push(ctx.idempotencyKey);
        return execute(keys.length) as Promise<unknown>;
      },
    );
    return { outcome: await call.catch((error: unknown) => error), keys, run };
  }

  const verified = { pay: { effect: "mutating" as const, idempotency: { verify: true } } };

  it("the verify step found no effect: one move, to failed (was uncertain, then failed)", async () => {
    const s = countingStore();
    const { outcome, keys } = await pay(
      { store: s.store, verify: { pay: () => ({ effect: "absent" }) } },
      { pay: { ...verified.pay, retry: { attempts: 2 } } },
      async (n) => (n === 1 ? Promise.reject(lost()) : ok("paid")),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2, replayed: false });
    // The retry sent the same key.
    expect(keys).toEqual([keys[0], keys[0]]);
    // Per key: the failed attempt's one move, then the success's (which frees the content's
    // entry: an identical write later is a new write, doubt.ts).
    expect(s.byKey()).toEqual([
      ["failed", "failed"],
      ["failed", "succeeded"],
    ]);
  });

  it("the verify step found the write: one move, to succeeded with its result", async () => {
    const s = countingStore();
    const { outcome, keys } = await pay(
      { store: s.store, verify: { pay: () => ({ effect: "present", result: ok("paid") }) } },
      verified,
      () => Promise.reject(lost()),
    );
    expect(outcome).toMatchObject({ kind: "ok", replayed: true });
    expect(s.byKey()).toEqual([["failed"], ["succeeded"]]);
    expect(s.memory.entry(keys[0] as string)).toMatchObject({
      state: "succeeded",
      result: ok("paid"),
    });
  });

  it("the verify step cannot tell, or throws: one move, to uncertain", async () => {
    for (const verify of [
      () => ({ effect: "unknown" as const }),
      () => {
        throw new Error("verify broke");
      },
    ]) {
      const s = countingStore();
      const { outcome, keys } = await pay(
        { store: s.store, verify: { pay: verify } },
        verified,
        () => Promise.reject(lost()),
      );
      expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
      expect(s.byKey()).toEqual([["uncertain"], ["uncertain"]]);
      expect(s.memory.entry(keys[0] as string)?.state).toBe("uncertain");
    }
  });

  it("the deadline passes while the verify step runs (it ignores its signal): one move, to uncertain", async () => {
    const s = countingStore();
    const { outcome, keys } = await pay(
      { store: s.store, verify: { pay: never } },
      verified,
      () => Promise.reject(lost()),
      { wallTimeMs: 60 },
    );
    expect(outcome).toMatchObject({ kind: "stop" });
    expect(s.byKey()).toEqual([["uncertain"], ["uncertain"]]);
    expect(s.memory.entry(keys[0] as string)?.state).toBe("uncertain");
  });

  it("a retry of a write whose connection was refused: one move per attempt, each sent with the same key", async () => {
    const s = countingStore();
    const { outcome, keys } = await pay(
      { store: s.store },
      { pay: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { attempts: 3 } } },
      async (n) => (n < 3 ? Promise.reject(refused()) : ok("paid")),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 3 });
    expect(new Set(keys).size).toBe(1);
    expect(s.byKey()).toEqual([
      ["failed", "failed", "failed"],
      ["failed", "failed", "succeeded"],
    ]);
  });

  it("a budget refuses the retry: one move", async () => {
    const s = countingStore();
    const { outcome, keys } = await pay(
      { store: s.store },
      { pay: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { attempts: 3 } } },
      () => Promise.reject(refused()),
      { retries: 0 },
    );
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(keys).toHaveLength(1);
    expect(s.byKey()).toEqual([["failed"], ["failed"]]);
    expect(s.memory.entry(keys[0] as string)?.state).toBe("failed");
  });

  it("a failure only the host handles, thrown with no hook: the key is settled before the throw", async () => {
    const s = countingStore();
    const { outcome, keys } = await pay({ store: s.store }, { pay: { effect: "mutating" } }, () =>
      // A tool that throws a number: a malformed answer, the host's to handle.
      Promise.reject(42),
    );
    expect(HostError.isInstance(outcome)).toBe(true);
    expect(outcome).toMatchObject({ certainty: "unknown", idempotencyKey: keys[0] });
    expect(s.byKey()).toEqual([["uncertain"], ["uncertain"]]);
    expect(s.memory.entry(keys[0] as string)?.state).toBe("uncertain");
  });

  it("the host's hook throws, or is cut by an abort while it waits: one move, never left claimed", async () => {
    for (const hook of ["throws", "waits"] as const) {
      const s = countingStore();
      const controller = new AbortController();
      const { outcome, keys } = await pay(
        {
          store: s.store,
          onHostError: () => {
            if (hook === "throws") throw new Error("hook broke");
            setTimeout(() => controller.abort(), 20);
            return never();
          },
        },
        { pay: { effect: "mutating" } },
        () => Promise.reject(42),
        {},
        controller.signal,
      );
      expect(outcome).toMatchObject({
        kind: "stop",
        reason: hook === "throws" ? "malformed_response" : "aborted",
        idempotencyKey: keys[0],
      });
      expect(s.byKey()).toEqual([["uncertain"], ["uncertain"]]);
      expect(s.memory.entry(keys[0] as string)?.state).toBe("uncertain");
    }
  });

  it("the judging throws (a store whose learned record is malformed): the key is settled before the throw goes on", async () => {
    const s = countingStore();
    // A remote store answering a learned-outcome read with a record that has no counts: reading
    // it throws inside the judging, after the attempt and before the decision.
    const store: Store = { ...s.store, outcome: async () => ({}) as OutcomeRecord };
    const { outcome, keys } = await pay(
      { store },
      { pay: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { attempts: 3 } } },
      () => Promise.reject(refused()),
    );
    expect(outcome).toBeInstanceOf(TypeError);
    expect(keys).toHaveLength(1);
    expect(s.byKey()).toEqual([["failed"], ["failed"]]);
    expect(s.memory.entry(keys[0] as string)?.state).toBe("failed");
  });

  it("the store fails on the settle: one try, nothing retried, the key counts as uncertain after its lease", async () => {
    const s = countingStore({ failSettles: true });
    const hosts: HostError[] = [];
    const { outcome, keys } = await pay(
      { store: s.store, onHostError: (e) => void hosts.push(e) },
      { pay: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { attempts: 3 } } },
      () => Promise.reject(lost()),
    );
    expect(outcome).toMatchObject({ kind: "stop", reason: "store_unavailable" });
    expect(keys).toHaveLength(1);
    // The content entry's settle failed first: the key's own was not tried.
    expect(s.settles).toHaveLength(1);
    expect(hosts[0]).toMatchObject({ reason: "store_unavailable", idempotencyKey: keys[0] });
    const key = keys[0] as string;
    expect(s.memory.entry(key)?.state).toBe("pending");
    // Past its lease (15 min at most) the pending key is a write in doubt: refused, not in flight.
    const later = s.memory.claim(key, s.memory.entry(key)?.argsHash as string, {
      now: Date.now() + 16 * 60_000,
      allowUncertain: false,
      leaseMs: 1000,
    });
    expect(later.status).toBe("uncertain");
  });
});
