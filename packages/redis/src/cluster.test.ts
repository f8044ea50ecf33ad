import { randomUUID } from "node:crypto";
import type { StoreError } from "@governor/core";
import { describeStoreContract } from "@governor/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../../test/support/rejection.ts";
import { layout, slotOf } from "./layout.ts";
import { createRedisStore, type RedisStore, type RedisStoreOptions } from "./redis-store.ts";
import { clusterTests, type LocalCluster, startLocalCluster } from "./testing-cluster.ts";
import { errorCount, failoverLosses, runFailoverLoad } from "./testing-failover.ts";

// A real Redis Cluster (3 primaries, 3 replicas) started by this file: with
// GOVERNOR_REDIS_CLUSTER=1 (CI; a missing redis-server or redis-cli fails the file), or where the
// other Redis tests run (REDIS_URL, GOVERNOR_REQUIRE_REDIS=1) and the binaries are on PATH.
const clusters = clusterTests();

const LEASE = 30_000;
const claimAt = (now = Date.now(), allowUncertain = false) => ({
  now,
  allowUncertain,
  leaseMs: LEASE,
});

describe.runIf(clusters.run)("RedisStore on Redis Cluster", { timeout: 120_000 }, () => {
  let cluster: LocalCluster;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    cluster = await startLocalCluster(0);
  }, 90_000);
  afterAll(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await cluster?.stop();
  });
  async function open(options: Omit<RedisStoreOptions, "client" | "url"> = {}) {
    const store = createRedisStore({
      client: await cluster.client(),
      prefix: `gov-test:${randomUUID()}:`,
      commandTimeoutMs: 2_000,
      ...options,
    });
    stores.push(store);
    return store;
  }
  /** A key whose bucket (of 16 under any prefix) lives in `slot`'s shard, and its bucket. */
  function keyIn(prefix: string, tag: string, n: number): string {
    const keys = layout(prefix, 16);
    for (let i = 0; ; i++) {
      const key = `${tag}-${i}`;
      if (keys.bucketOf(key).index === n) return key;
    }
  }

  describe("the contract", () => {
    // Caps are kept per bucket (each bucket holds its share, rounded up): the contract's cap
    // tests (a cap of 3) run on one bucket, where the cap is exact; every other test runs on
    // 16 buckets spread over the three primaries.
    describeStoreContract(
      "RedisStore on a cluster",
      async ({ retentionMs, maxUnsettled, maxOutcomes }) =>
        open({
          // The contract's bursts (500 commands at once) may take over 2 s on a loaded machine;
          // the failover tests below keep the short timeouts they test.
          commandTimeoutMs: 10_000,
          retentionMs,
          maxUnsettled,
          maxOutcomes,
          buckets: maxUnsettled < 16 || maxOutcomes < 16 ? 1 : 16,
        }),
    );
  });

  it("spreads a ledger over every primary, each script's keys in one slot", async () => {
    const prefix = `gov-test:${randomUUID()}:`;
    const store = createRedisStore({ client: await cluster.client(), prefix });
    stores.push(store);
    const keys = Array.from({ length: 480 }, (_, i) => `job-${i}`);
    await Promise.all(keys.map((k) => store.claim(k, "h", claimAt())));
    await Promise.all(
      keys.map((k) => store.settle(k, "succeeded", { now: Date.now(), result: k })),
    );
    const perPrimary = new Map<number, number>();
    const buckets = layout(prefix, 16);
    for (const key of keys) {
      const bucket = buckets.bucketOf(key);
      // The entry, its result and its bucket's indexes share the bucket's slot.
      const slots = new Set(
        [
          `${bucket.prefix}l:${key}`,
          `${bucket.prefix}r:${key}`,
          bucket.unsettled,
          bucket.settled,
          bucket.epoch,
        ].map(slotOf),
      );
      expect(slots.size).toBe(1);
      const primary = await cluster.primaryOf([...slots][0] as number);
      perPrimary.set(primary.port, (perPrimary.get(primary.port) ?? 0) + 1);
    }
    expect(perPrimary.size).toBe(3);
    // 16 buckets over 3 primaries: 5, 5 and 6 buckets; keys hash evenly over buckets.
    for (const count of perPrimary.values()) expect(count).toBeGreaterThan(480 * 0.2);
    expect(await store.entry(keys[0] as string)).toMatchObject({
      state: "succeeded",
      result: "job-0",
    });
    // The unsettled cap is kept per bucket and summed: nothing is left unsettled.
    let unsettled = 0;
    for (const bucket of buckets.buckets) {
      unsettled += Number(
        await (await cluster.client()).sendCommand(bucket.unsettled, true, [
          "SCARD",
          bucket.unsettled,
        ]),
      );
    }
    expect(unsettled).toBe(0);
    // Each bucket's epoch, on its own primary, remembers that its primary has had a replica.
    for (const bucket of buckets.buckets) {
      expect(
        await (await cluster.client()).sendCommand(bucket.epoch, true, [
          "HGET",
          bucket.epoch,
          "replicated",
        ]),
      ).toBe("1");
    }
  });

  it("keeps the unsettled cap per bucket: a full bucket refuses, the others still take claims", async () => {
    const prefix = `gov-test:${randomUUID()}:`;
    const store = createRedisStore({ client: await cluster.client(), prefix, maxUnsettled: 32 });
    stores.push(store);
    // 32 over 16 buckets: 2 each.
    const [a, b, c] = [0, 1, 2].map((i) => keyIn(prefix, `same-${i}`, 3));
    expect((await store.claim(a as string, "h", claimAt())).status).toBe("claimed");
    expect((await store.claim(b as string, "h", claimAt())).status).toBe("claimed");
    expect(await store.claim(c as string, "h", claimAt())).toEqual({ status: "ledger_full" });
    expect((await store.claim(keyIn(prefix, "other", 4), "h", claimAt())).status).toBe("claimed");
  });

  it("refuses a hash tag in the prefix and a bucket count other than the prefix's", async () => {
    const client = await cluster.client();
    expect(() => createRedisStore({ client, prefix: "{governor}:" })).toThrow(
      /prefix must not hold a hash tag on a cluster .*got "\{governor\}:"/,
    );
    const prefix = `gov-test:${randomUUID()}:`;
    const first = createRedisStore({ client, prefix });
    await first.claim("k", "h", claimAt());
    const other = createRedisStore({ client, prefix, buckets: 8 });
    const error = await rejection(other.claim("k", "h", claimAt()));
    expect((error as StoreError).reason).toBe("misconfigured");
    expect((error as Error).message).toMatch(/has 16 buckets and this store was given 8/);
  });

  it("checks every primary at connect: one evicting primary refuses the store", async () => {
    const [, second] = (await cluster.nodes()).filter((n) => n.primary);
    const port = (second as { port: number }).port;
    await cluster.command(port, ["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    try {
      const store = await open();
      const error = await rejection(store.get("k"));
      expect((error as StoreError).reason).toBe("misconfigured");
      expect((error as Error).message).toMatch(/maxmemory-policy is allkeys-lru/);
    } finally {
      await cluster.command(port, ["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    }
  });

  it("workers whose clocks are minutes apart take over nothing still in flight", async () => {
    const prefix = `gov-test:${randomUUID()}:`;
    const behind = await open({ prefix });
    const ahead = await open({ prefix });
    const minutes = 60_000;
    const keys = Array.from({ length: 16 }, (_, i) => `job-${i}`);
    // The first worker's clock is 5 minutes behind; its leases are 10 minutes.
    for (const key of keys) {
      const held = await behind.claim(key, "h", {
        now: Date.now() - 5 * minutes,
        allowUncertain: false,
        leaseMs: 10 * minutes,
      });
      expect(held.status).toBe("claimed");
    }
    // The second is 11 minutes ahead: by its clock every lease has passed. By the server's,
    // none has: every key is in flight, and nothing is marked uncertain either.
    for (const key of keys) {
      for (const allowUncertain of [true, false]) {
        const taken = await ahead.claim(key, "h", {
          now: Date.now() + 11 * minutes,
          allowUncertain,
          leaseMs: 10 * minutes,
        });
        expect(taken.status).toBe("in_flight");
      }
      expect((await ahead.entry(key))?.state).toBe("pending");
    }
    // A lease does pass on the server's clock, whatever a claimer's clock says.
    await behind.claim("brief", "h", {
      now: Date.now() - 5 * minutes,
      allowUncertain: false,
      leaseMs: 50,
    });
    await new Promise((resolve) => setTimeout(resolve, 120));
    const late = await ahead.claim("brief", "h", {
      now: Date.now() - 20 * minutes,
      allowUncertain: false,
      leaseMs: 50,
    });
    expect(late.status).toBe("uncertain");
  });

  describe("failover", () => {
    /**
     * Cuts the replica of `primaryPort` off its primary (a wrong masterauth, then its link
     * dropped: it cannot resync), so what the primary writes next never reaches it.
     */
    async function isolateReplica(primaryPort: number): Promise<number> {
      const nodes = await cluster.nodes();
      const primary = nodes.find((n) => n.port === primaryPort);
      const replica = nodes.find((n) => n.primaryId === primary?.id);
      if (replica === undefined) throw new Error("no replica");
      await cluster.command(replica.port, ["CONFIG", "SET", "masterauth", "wrong"]);
      await cluster.command(replica.port, ["CLIENT", "KILL", "TYPE", "master"]);
      return replica.port;
    }
    /** Kills `port`, waits for its replica's promotion, restarts it as a replica. */
    async function failover(port: number, replica: number): Promise<void> {
      await cluster.kill(port);
      await cluster.settled();
      await cluster.command(replica, ["CONFIG", "SET", "masterauth", ""]);
      await cluster.restart(port);
      await cluster.settled({ replica: port });
    }
    /** Lets a replica that `isolateReplica` cut off resync (when a test ended before failover). */
    async function reconnect(replica: number): Promise<void> {
      await cluster.command(replica, ["CONFIG", "SET", "masterauth", ""]).catch(() => {});
      await cluster.settled();
    }

    it("issue 28: with waitForReplicas 0, a failover that lost a worker's claim and settle is detected, whatever was written since", async () => {
      const prefix = `gov-test:${randomUUID()}:`;
      const a = await open({ prefix, waitForReplicas: 0 });
      const b = await open({ prefix, waitForReplicas: 0 });
      const job = keyIn(prefix, "job", 5);
      const bucket = layout(prefix, 16).bucketOf(job);
      const primary = await cluster.primaryOf(slotOf(bucket.epoch));
      // Both workers have used the bucket.
      await b.claim(keyIn(prefix, "warm-b", 5), "h", claimAt());
      await a.claim(keyIn(prefix, "warm-a", 5), "h", claimAt());
      const replica = await isolateReplica(primary.port);
      // A claims the job, runs it and settles it: the replica never gets either.
      expect((await a.claim(job, "h", claimAt())).status).toBe("claimed");
      await a.settle(job, "succeeded", { now: Date.now(), result: "done" });
      await failover(primary.port, replica);
      // B, which saw none of A's writes, is not refused: its claim of the job answers
      // claimed (this is what waitForReplicas 0 risks; see the next test for the default).
      const resumed = await b.claim(job, "h", claimAt());
      expect(resumed.status).toBe("claimed");
      // B and others write on: the epoch's number goes well past what A saw.
      for (let i = 0; i < 20; i++) await b.claim(keyIn(prefix, `more-${i}`, 5), "h", claimAt());
      // A's next operation on the bucket finds its writes gone, and marks the ledger lost.
      const error = await rejection(a.claim(keyIn(prefix, "next", 5), "h", claimAt()));
      expect((error as StoreError).reason).toBe("ledger_lost");
      expect((error as Error).message).toMatch(/went back in time/);
      // From then on every worker is refused on that bucket, B included.
      const refused = await rejection(b.claim(keyIn(prefix, "after", 5), "h", claimAt()));
      expect((refused as StoreError).reason).toBe("ledger_lost");
    });

    it("issue 28: by default (1 replica: WAIT 1) the claim no replica got is refused, and the job runs once", async () => {
      const prefix = `gov-test:${randomUUID()}:`;
      const a = await open({ prefix, commandTimeoutMs: 600 });
      const b = await open({ prefix, commandTimeoutMs: 600 });
      const job = keyIn(prefix, "job", 9);
      const primary = await cluster.primaryOf(slotOf(layout(prefix, 16).bucketOf(job).epoch));
      await a.claim(keyIn(prefix, "warm", 9), "h", claimAt());
      const replica = await isolateReplica(primary.port);
      let runs = 0;
      try {
        // The replica is gone from the primary's list now; the store saw it before.
        const error = await rejection(
          a.claim(job, "h", claimAt()).then((r) => {
            runs += 1;
            return r;
          }),
        );
        expect((error as StoreError).reason).toBe("unavailable");
        expect((error as Error).message).toMatch(/only 0 of 1 replicas confirmed/);
        // A worker that never saw the replica is refused too: the bucket's epoch remembers it.
        const late = await open({ prefix, commandTimeoutMs: 600 });
        const refused = await rejection(late.claim(keyIn(prefix, "late", 9), "h", claimAt()));
        expect((refused as Error).message).toMatch(/only 0 of 1 replicas confirmed/);
      } catch (error) {
        await reconnect(replica);
        throw error;
      }
      await failover(primary.port, replica);
      const resumed = await b.claim(job, "h", claimAt());
      expect(resumed.status).toBe("claimed");
      runs += 1;
      expect(runs).toBe(1);
    });

    it("issue 28: 8 workers claim and settle while a primary is killed: no write twice, no answered claim lost (waitForReplicas 1)", async () => {
      const prefix = `gov-test:${randomUUID()}:`;
      const workers = await Promise.all(
        Array.from({ length: 8 }, () =>
          open({ prefix, waitForReplicas: 1, commandTimeoutMs: 1_000 }),
        ),
      );
      let killed: Promise<void> | undefined;
      const victim = (
        await cluster.primaryOf(slotOf(layout(prefix, 16).buckets[0]?.epoch as string))
      ).port;
      const before = await cluster.nodes();
      const victimId = before.find((n) => n.port === victim)?.id;
      const replica = before.find((n) => n.primaryId === victimId)?.port;
      const restarted = (async () => {
        while (killed === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
        await killed;
        await cluster.settled();
        await cluster.restart(victim);
        await cluster.settled({ replica: victim });
      })();
      const load = await runFailoverLoad(workers, {
        jobs: 400,
        retries: 40,
        claimAt,
        onAnswered: (answered) => {
          if (answered === 150) killed ??= cluster.kill(victim);
        },
      });
      await restarted;
      expect(replica).toBeDefined();

      const { lost, twice } = await failoverLosses(
        await open({ prefix, waitForReplicas: 0 }),
        load,
      );
      // No write ran twice.
      expect(twice).toEqual([]);
      // Every claim the store answered is still in the ledger, every answered settle with it.
      expect(lost).toEqual([]);
      expect(load.errors.get("ledger_lost") ?? 0).toBe(0);
      // The failover happened under load: some operations failed while it ran, and most jobs ran.
      expect(errorCount(load)).toBeGreaterThan(0);
      expect(load.runs.size).toBeGreaterThan(300);
    });
  });
});
