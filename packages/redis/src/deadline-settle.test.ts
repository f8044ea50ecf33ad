import { randomUUID } from "node:crypto";
import { createGovernor, HostError } from "@governor/core";
import { afterAll, describe, expect, it } from "vitest";
import { createRedisStore, type RedisStore } from "./redis-store.ts";
import { sharedRedis } from "./testing-server.ts";

// A real server at REDIS_URL (skipped without one, failing under GOVERNOR_REQUIRE_REDIS=1).
const redis = await sharedRedis("RedisStore deadline settle");
const available = redis.problem === undefined;

/**
 * A store under a prefix of its own for the suite it is made in, closed after it (none when the
 * suite is skipped: vitest still collects it). Each suite its own prefix: a write one leaves in
 * doubt must not refuse another's identical write.
 */
function suiteStore(): RedisStore | undefined {
  if (!available) return undefined;
  const store = createRedisStore({
    url: redis.url as string,
    prefix: `governor-test:${randomUUID()}:`,
  });
  afterAll(async () => {
    await store.close();
  });
  return store;
}

/** `inner` with its `settle` replaced by `settle` (which may call the real one); the rest as is. */
function withSettle(
  inner: RedisStore,
  settle: (...args: Parameters<RedisStore["settle"]>) => ReturnType<RedisStore["settle"]>,
): RedisStore {
  return new Proxy(inner, {
    get(target, name) {
      if (name === "settle") return settle;
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe.runIf(available)("issue 26.7: a write cut by the run's deadline, on RedisStore", () => {
  const store = suiteStore();

  it("records its key uncertain and stops uncertain_mutation (was: HostError 'no answer within 0 ms')", async () => {
    const governor = createGovernor(
      // Wide enough for the claim before the send on a loaded machine (300 ms was not, once).
      { tools: { charge: { effect: "mutating" } }, budgets: { wallTimeMs: 1_000 } },
      // The store's answers, not the deadline's time left, bound the steps after the cut.
      { store: store as RedisStore, metrics: false, storeTimeoutMs: 2_000 },
    );
    let key: string | undefined;
    const outcome = await governor
      .startRun()
      .call({ tool: "charge", args: { amount: 5 } }, (ctx) => {
        key = ctx.idempotencyKey;
        // The answer never comes: the deadline cuts it.
        return new Promise(() => {});
      })
      .catch((error: unknown) => error);
    expect(outcome).not.toBeInstanceOf(HostError);
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      idempotencyKey: key,
    });
    expect((await store?.entry(key as string))?.state).toBe("uncertain");
  });
});

describe.runIf(available)(
  "a failed attempt's one settle after the deadline passed, on RedisStore",
  () => {
    const store = suiteStore();

    it("a refusal the host's hook held past the deadline is recorded failed, not store trouble", async () => {
      const hosts: string[] = [];
      const inner = store as RedisStore;
      // A store a few ms away: its settle answers after the deadline's time left (none).
      const distant = withSettle(inner, async (...args) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return inner.settle(...args);
      });
      const governor = createGovernor(
        // Wide enough for the claim before the send on a loaded machine; the hook outlasts it.
        { tools: { charge: { effect: "mutating" } }, budgets: { wallTimeMs: 1_000 } },
        {
          store: distant,
          metrics: false,
          storeTimeoutMs: 2_000,
          // The host looks into the failure until after the deadline.
          onHostError: async (error) => {
            hosts.push(error.reason);
            if (hosts.length === 1) await new Promise((resolve) => setTimeout(resolve, 1_300));
          },
        },
      );
      let key: string | undefined;
      const outcome = await governor
        .startRun()
        .call({ tool: "charge", args: { amount: 5 } }, async (ctx) => {
          key = ctx.idempotencyKey;
          // Refused before anything ran (JSON-RPC "method not found"): the host's to handle.
          throw Object.assign(new Error("Method not found"), { code: -32601 });
        })
        .catch((error: unknown) => error);
      expect(outcome).toMatchObject({ kind: "stop", reason: "protocol_error" });
      expect(hosts).toEqual(["protocol_error"]);
      expect((await store?.entry(key as string))?.state).toBe("failed");
    });
  },
);

describe.runIf(available)(
  "a failed write's key settled once, when its verify step answered, on RedisStore",
  () => {
    const store = suiteStore();

    /** The store, its settles listed (`gk_…`: a call's key; `gd_…`: its content's entry). */
    function counted(inner: RedisStore) {
      const settles: [key: string, to: string][] = [];
      const wrapped = withSettle(inner, (...args) => {
        settles.push([args[0], args[1]]);
        return inner.settle(...args);
      });
      const byKey = () => {
        const moves = new Map<string, string[]>();
        for (const [k, to] of settles) moves.set(k, [...(moves.get(k) ?? []), to]);
        return [...moves.entries()].map(([k, to]) => [k.slice(0, 3), to]);
      };
      return { wrapped, byKey };
    }

    const lost = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    const ok = (t: string) => ({ content: [{ type: "text", text: t }] });

    it.each([
      ["absent: freed once, then the retry's success", "absent"],
      ["present: succeeded once, with its result", "present"],
    ] as const)(
      "the verify step found the write %s (was: uncertain, then again)",
      async (_name, effect) => {
        const s = counted(store as RedisStore);
        const governor = createGovernor(
          {
            tools: {
              charge: {
                effect: "mutating",
                idempotency: { verify: true },
                retry: { attempts: 2, baseDelayMs: 1 },
              },
            },
          },
          {
            store: s.wrapped,
            metrics: false,
            verify: {
              charge: () =>
                effect === "absent" ? { effect } : { effect, result: ok("charged (verified)") },
            },
          },
        );
        const keys: (string | undefined)[] = [];
        const outcome = await governor
          .startRun()
          .call({ tool: "charge", args: { amount: randomUUID() } }, async (ctx) => {
            keys.push(ctx.idempotencyKey);
            if (keys.length === 1) throw lost();
            return ok("charged");
          });
        const key = keys[0] as string;
        if (effect === "absent") {
          expect(outcome).toMatchObject({ kind: "ok", attempts: 2, replayed: false });
          expect(keys).toEqual([key, key]);
          expect(s.byKey()).toEqual([
            ["gd_", ["failed", "failed"]],
            ["gk_", ["failed", "succeeded"]],
          ]);
        } else {
          expect(outcome).toMatchObject({ kind: "ok", replayed: true });
          expect(s.byKey()).toEqual([
            ["gd_", ["failed"]],
            ["gk_", ["succeeded"]],
          ]);
        }
        expect((await store?.entry(key))?.state).toBe("succeeded");
      },
    );
  },
);
