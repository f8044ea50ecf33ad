import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createGovernor, GovernorError, type Store, StoreError } from "@governor/core";
import { describeStoreContract } from "@governor/core/testing";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../../test/support/rejection.ts";
import { createRedisStore, type RedisStore, type RedisStoreClient } from "./redis-store.ts";
import { sharedRedis } from "./testing-server.ts";

// The tests need a real server at REDIS_URL (skipped without one, failing under
// GOVERNOR_REQUIRE_REDIS=1).
const redis = await sharedRedis("RedisStore");
const url = redis.url;
const problem = redis.problem;
const available = problem === undefined;

describe.runIf(available)(available ? "RedisStore" : `RedisStore (skipped: ${problem})`, () => {
  const serverUrl = url as string;
  const shared = createClient({ url: serverUrl });
  const prefixes = new WeakMap<Store, string>();
  const freshPrefix = () => `governor-test:${randomUUID()}:`;

  beforeAll(async () => {
    await shared.connect();
  });
  afterAll(async () => {
    await shared.close();
  });

  async function deleteUnder(prefix: string): Promise<void> {
    for await (const keys of shared.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) {
      if (keys.length > 0) await shared.del(keys);
    }
  }

  describeStoreContract(
    "RedisStore",
    ({ retentionMs, maxUnsettled, maxOutcomes }) => {
      const prefix = freshPrefix();
      const store = createRedisStore({
        client: shared,
        prefix,
        retentionMs,
        maxUnsettled,
        maxOutcomes,
      });
      prefixes.set(store, prefix);
      return store;
    },
    {
      cleanup: async (store) => {
        const prefix = prefixes.get(store);
        if (prefix !== undefined) await deleteUnder(prefix);
      },
    },
  );

  describe("on the server", () => {
    const at = (now: number, allowUncertain = false) => ({ now, allowUncertain, leaseMs: 1_000 });

    it("lays keys out under the prefix, with a Redis expiry only on what may be forgotten", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix, retentionMs: 60_000 });
      try {
        await store.claim("k", "h1", at(1_000));
        expect(await shared.hGetAll(`${prefix}l:k`)).toEqual({
          argsHash: "h1",
          state: "pending",
          updatedAt: "1000",
          leaseMs: "1000",
          // The lease runs from the server's time at the claim, not from the claimer's `now`.
          leaseFrom: expect.stringMatching(/^\d{13}$/) as unknown as string,
          // The claim's mark, by the server's clock too (what a settle of this claim names).
          claimedAt: expect.stringMatching(/^\d{13}$/) as unknown as string,
        });
        expect(await shared.pTTL(`${prefix}l:k`)).toBe(-1);
        expect(await shared.sMembers(`${prefix}unsettled`)).toEqual(["k"]);
        expect(await shared.hGet(`${prefix}epoch`, "seq")).toBe("1");

        await store.settle("k", "succeeded", { now: 1_100, result: { id: 7 } });
        // The state entry never expires by Redis (an evicting policy cannot pick it); the result
        // lives apart and does.
        const held = await shared.hGetAll(`${prefix}l:k`);
        expect(held).toMatchObject({ argsHash: "h1", state: "succeeded", hasResult: "1" });
        expect(held.result).toBeUndefined();
        expect(await shared.pTTL(`${prefix}l:k`)).toBe(-1);
        expect(await shared.get(`${prefix}r:k`)).toBe('{"id":7}');
        const ttl = await shared.pTTL(`${prefix}r:k`);
        expect(ttl).toBeGreaterThan(50_000);
        expect(ttl).toBeLessThanOrEqual(60_000);
        const expiresAt = Number(held.expiresAt);
        expect(await shared.zScore(`${prefix}settled`, "k")).toBe(expiresAt);
        expect(await shared.sCard(`${prefix}unsettled`)).toBe(0);

        await store.settle("k", "uncertain", { now: 1_200 });
        expect(await shared.pTTL(`${prefix}l:k`)).toBe(-1);
        expect(await shared.hExists(`${prefix}l:k`, "hasResult")).toBe(0);
        expect(await shared.exists(`${prefix}r:k`)).toBe(0);
        expect(await shared.zCard(`${prefix}settled`)).toBe(0);
        expect(await shared.sMembers(`${prefix}unsettled`)).toEqual(["k"]);

        await store.set("v", { a: 1 }, 30_000);
        expect(await shared.get(`${prefix}v:v`)).toBe('{"a":1}');
        expect(await shared.pTTL(`${prefix}v:v`)).toBeGreaterThan(20_000);
      } finally {
        await deleteUnder(prefix);
      }
    });

    it("names the claim of a pending entry an earlier version's claim wrote as its settles name it", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix, retentionMs: 60_000 });
      try {
        const mine = await store.claim("k", "h1", { now: 1_000, allowUncertain: true, leaseMs: 1 });
        const ours = mine.status === "claimed" ? mine.claimedAt : undefined;
        expect(ours).toEqual(expect.any(Number));
        // A process still on the version before claim marks takes the key over (its lease
        // passed): that CLAIM deleted the entry and wrote it again with no claimedAt field.
        await shared.del(`${prefix}l:k`);
        await shared.hSet(`${prefix}l:k`, {
          argsHash: "h1",
          state: "pending",
          updatedAt: "5000",
          leaseMs: "60000",
          leaseFrom: String(Date.now()),
        });
        // Read back, the entry is held under that process's claim, not under none (a holder
        // that found no claim named would take the entry for its own and overwrite it).
        const found = await store.entry("k");
        expect(found).toMatchObject({ state: "pending", claimedAt: 5_000 });
        expect(found?.claimedAt).not.toBe(ours);
        // As SETTLE reads it: a settle naming our claim is dropped, one naming that claim lands.
        await store.settle("k", "failed", {
          now: 6_000,
          ...(ours !== undefined && { claimedAt: ours }),
        });
        expect((await store.entry("k"))?.state).toBe("pending");
        await store.settle("k", "failed", { now: 6_000, claimedAt: 5_000 });
        expect((await store.entry("k"))?.state).toBe("failed");
      } finally {
        await deleteUnder(prefix);
      }
    });

    it("a settle reads an entry past its retention, not yet purged, as absent (as a claim does): a hold then keeps nothing", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix, retentionMs: 60_000 });
      try {
        const claim = await store.claim("k", "h1", at(Date.now()));
        expect(claim.status).toBe("claimed");
        const a = claim.status === "claimed" ? (claim.claimedAt as number) : 0;
        expect(a).toBeGreaterThan(0);
        await store.settle("k", "failed", { now: Date.now(), claimedAt: a });
        // Its retention ran out; the settled set still names it later, so no purge has taken it.
        await shared.hSet(`${prefix}l:k`, "expiresAt", "1");
        await store.settle("k", "failed", { now: Date.now(), claimedAt: a, holdMs: 60_000 });
        // Created afresh, as a settle by hand: no claim, no hold (was held for a minute).
        const fields = await shared.hGetAll(`${prefix}l:k`);
        expect(fields).toMatchObject({ argsHash: "", state: "failed" });
        expect(fields.claimedAt).toBeUndefined();
        expect(fields.heldUntil).toBeUndefined();
        expect((await store.claim("k", "h1", at(Date.now()))).status).toBe("claimed");
      } finally {
        await deleteUnder(prefix);
      }
    });

    it("issue 12.5: keeps a learned record as a hash with a Redis expiry, indexed by its time", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix });
      try {
        await store.addOutcome("s/t/f", "retry_futile", {
          now: 1_000,
          halfLifeMs: 1_000,
          ttlMs: 60_000,
        });
        await store.addOutcome("s/t/f", "retry_futile", {
          now: 2_000,
          halfLifeMs: 1_000,
          ttlMs: 60_000,
        });
        expect(await shared.hGetAll(`${prefix}o:s/t/f`)).toEqual({
          "@t": "2000",
          retry_futile: "1.5",
        });
        const ttl = await shared.pTTL(`${prefix}o:s/t/f`);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
        expect(await shared.zRangeWithScores(`${prefix}outcomes`, 0, -1)).toEqual([
          { value: "s/t/f", score: 2_000 },
        ]);
        // Nothing of the ledger or the values is touched.
        expect(await shared.exists(`${prefix}epoch`)).toBe(0);
      } finally {
        await deleteUnder(prefix);
      }
    });

    it("gives a counter its expiry once, at creation", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix });
      try {
        expect(await store.increment("c", 1, 60_000)).toBe(1);
        expect(await shared.pTTL(`${prefix}v:c`)).toBeGreaterThan(50_000);
        await shared.pExpire(`${prefix}v:c`, 5_000);
        expect(await store.increment("c", 2, 60_000)).toBe(3);
        expect(await shared.pTTL(`${prefix}v:c`)).toBeLessThanOrEqual(5_000);
        await store.set("plain", 5);
        expect(await store.increment("plain", 1, 60_000)).toBe(6);
        expect(await shared.pTTL(`${prefix}v:plain`)).toBeGreaterThan(50_000);
      } finally {
        await deleteUnder(prefix);
      }
    });

    it("lets exactly one of two workers claim a key, 100 times over", async () => {
      const prefix = freshPrefix();
      const workers = [
        createRedisStore({ url: serverUrl, prefix }),
        createRedisStore({ url: serverUrl, prefix }),
      ];
      try {
        for (let round = 0; round < 100; round++) {
          const key = `call-${round}`;
          const claims = await Promise.all(
            workers.flatMap((worker) =>
              Array.from({ length: 5 }, () => worker.claim(key, "h1", at(1_000, true))),
            ),
          );
          const statuses = claims.map((c) => c.status);
          expect(statuses.filter((s) => s === "claimed")).toHaveLength(1);
          expect(statuses.filter((s) => s === "in_flight")).toHaveLength(9);
        }
        expect(await shared.sCard(`${prefix}unsettled`)).toBe(100);
      } finally {
        await Promise.all(workers.map((worker) => worker.close()));
        await deleteUnder(prefix);
      }
    });

    it("runs its scripts again after the server forgot them", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix });
      try {
        await store.claim("a", "h1", at(1_000));
        await shared.scriptFlush();
        expect((await store.claim("b", "h1", at(1_000))).status).toBe("claimed");
        expect((await store.claim("a", "h1", at(1_001))).status).toBe("in_flight");
      } finally {
        await deleteUnder(prefix);
      }
    });

    it("closes the client it created, and only that one", async () => {
      const owned = createRedisStore({ url: serverUrl, prefix: freshPrefix() });
      expect(await owned.get("missing")).toBeUndefined();
      await owned.close();
      await owned.close();
      await expect(owned.get("missing")).rejects.toThrow(/store was closed/);

      const borrowed = createRedisStore({ client: shared, prefix: freshPrefix() });
      await borrowed.close();
      expect(await shared.ping()).toBe("PONG");
      expect(await borrowed.get("missing")).toBeUndefined();
    });

    it("closed at once, leaves no connection holding the process open", async () => {
      // node-redis lost a destroy() made while its socket was connecting: a script that created a
      // store and closed it before its first command (the package README's first example) never
      // exited.
      const code = [
        `const { createRedisStore } = await import(${JSON.stringify(new URL("./redis-store.ts", import.meta.url).href)});`,
        `const store = createRedisStore({ url: ${JSON.stringify(serverUrl)} });`,
        "await store.close();",
      ].join("\n");
      const child = spawn(
        process.execPath,
        ["--conditions=source", "--import", "tsx", "--input-type=module", "-e", code],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = await new Promise<number | null | "running">((resolve) => {
        const timer = setTimeout(() => resolve("running"), 10_000);
        child.on("exit", (status) => {
          clearTimeout(timer);
          resolve(status);
        });
      });
      child.kill();
      expect(exited, stderr).toBe(0);
    }, 20_000);

    it("fails with a store_error that says what failed", async () => {
      const prefix = freshPrefix();
      const store = createRedisStore({ client: shared, prefix });
      try {
        await store.set("object", { a: 1 });
        const error = await store.increment("object", 1, 1_000).catch((e: unknown) => e);
        expect(GovernorError.isInstance(error)).toBe(true);
        expect((error as GovernorError).code).toBe("store_error");
        expect(StoreError.isInstance(error)).toBe(true);
        expect((error as StoreError).reason).toBe("rejected");
        expect((error as Error).message).toBe(
          "RedisStore: increment failed: the value is not an integer counter; use another key for counters.",
        );
      } finally {
        await deleteUnder(prefix);
      }
    });
  });

  it("a worker that takes over another's write in doubt and cannot reach the tool leaves it uncertain", async () => {
    const prefix = freshPrefix();
    const policy = {
      tools: {
        pay: {
          effect: "mutating" as const,
          idempotency: { honorsKeys: true },
          retry: { attempts: 1 },
        },
      },
    };
    const worker = () =>
      createGovernor(policy, {
        metrics: false,
        random: () => 0,
        store: createRedisStore({ client: shared, prefix }),
      }).startRun({ idempotencyScope: "job-7" });
    try {
      // Worker A's answer is lost: the write may have happened.
      const a = await worker().call(
        { tool: "pay", args: { amount: 1 }, callId: "c1" },
        async () => {
          throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
        },
      );
      expect(a).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
      const key = a.kind === "stop" ? (a.idempotencyKey as string) : "";
      // Worker B takes the call over (the server deduplicates by key), but its connection is
      // refused: its attempt was not sent, and A's write is still in doubt (it used to be settled failed).
      const sent: (string | undefined)[] = [];
      await worker().call({ tool: "pay", args: { amount: 1 }, callId: "c1" }, async (ctx) => {
        sent.push(ctx.idempotencyKey);
        throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), {
          code: "ECONNREFUSED",
        });
      });
      expect(sent).toEqual([key]);
      const store = createRedisStore({ client: shared, prefix });
      expect((await store.entry(key))?.state).toBe("uncertain");
    } finally {
      await deleteUnder(prefix);
    }
  });
});

describe("createRedisStore without a server", () => {
  it("fails commands within connectTimeoutMs when the server is unreachable", async () => {
    let errors = 0;
    const store: RedisStore = createRedisStore({
      url: "redis://127.0.0.1:1",
      connectTimeoutMs: 150,
      onError: () => {
        errors++;
      },
    });
    const started = performance.now();
    const error = await store.get("k").catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(GovernorError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      "RedisStore: get failed: no connection to Redis within 150 ms.",
    );
    expect(errors).toBeGreaterThan(0);
    await store.close();
  });

  it.runIf(available)(
    "a commandTimeoutMs past what a timer holds (24.8 days) does not time commands out at 1 ms",
    async () => {
      // Node fires a timer of more than 2^31 - 1 ms after 1 ms: each command raced a 1 ms timeout.
      const store = createRedisStore({
        url: url as string,
        prefix: `governor-test:${randomUUID()}:`,
        commandTimeoutMs: 3_000_000_000,
      });
      const failed: unknown[] = [];
      for (let i = 0; i < 200; i++) await store.get(`k${i}`).catch((e: unknown) => failed.push(e));
      await store.close();
      expect(failed).toEqual([]);
    },
  );

  it("refuses a claim whose WAIT answered something other than a count (nothing confirmed it)", async () => {
    /** A server that passes the checks and claims, and answers WAIT with `waitReply`. */
    const fake = (waitReply: unknown, replicated: string) => ({
      sendCommand: async (args: readonly unknown[]): Promise<unknown> => {
        const [name, arg] = args.map(String);
        if (name === "INFO")
          return arg === "persistence" ? "aof_enabled:1" : "maxmemory_policy:noeviction";
        if (name === "CONFIG") return ["appendfsync", "everysec"];
        if (name === "SET") return "OK";
        if (name === "GET") return "1";
        if (name === "EVALSHA") {
          return [
            "claimed",
            "epoch-1",
            "1",
            "replid-1",
            replicated,
            "h1",
            "pending",
            "1000",
            "",
            "",
            "",
            "1700000000000",
          ];
        }
        if (name === "WAIT") return waitReply;
        throw new Error(`unexpected command ${String(name)}`);
      },
    });
    const claim = (client: ReturnType<typeof fake>, waitForReplicas?: number) =>
      createRedisStore({
        client: client as unknown as RedisStoreClient,
        ...(waitForReplicas !== undefined && { waitForReplicas }),
      }).claim("k", "h1", { now: 1_000, allowUncertain: false, leaseMs: 1_000 });
    // The fake claims as a server would when WAIT answers a count.
    expect((await claim(fake(1, "1"))).status).toBe("claimed");
    expect((await claim(fake(2, "0"), 2)).status).toBe("claimed");
    for (const reply of ["OK", undefined, "NaN", {}]) {
      for (const [client, wanted] of [
        [fake(reply, "1"), undefined],
        [fake(reply, "0"), 1],
      ] as const) {
        const error = await rejection(claim(client, wanted));
        expect((error as StoreError).reason).toBe("unavailable");
        expect((error as Error).message).toBe(
          "RedisStore: WAIT answered no count of replicas, so none of the 1 wanted is known to have the write.",
        );
      }
    }
  });

  it("says which options are wrong and what is accepted", () => {
    expect(() => createRedisStore({})).toThrow(/exactly one of client .* or url/);
    expect(() => createRedisStore({ url: "redis://x", maxUnsettled: 0 })).toThrow(
      /maxUnsettled must be a positive integer, got 0/,
    );
    expect(() => createRedisStore({ url: "redis://x", retentionMs: Number.NaN })).toThrow(
      /retentionMs must be a positive finite number of ms, got NaN/,
    );
  });
});
