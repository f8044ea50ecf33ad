import { randomUUID } from "node:crypto";
import type { StoreError } from "@governor/core";
import { describeStoreContract } from "@governor/core/testing";
import { createSentinel } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection } from "../../../test/support/rejection.ts";
import { createRedisStore, type RedisStore, type RedisStoreOptions } from "./redis-store.ts";
import { ConnectionChanged, sentinelTransport } from "./sentinel.ts";
import { errorCount, failoverLosses, runFailoverLoad } from "./testing-failover.ts";
import {
  type LocalSentinel,
  SENTINEL_NAME,
  sentinelTests,
  startLocalSentinel,
} from "./testing-sentinel.ts";

// A real Sentinel setup (a primary, its replica, 3 sentinels) started by this file: with
// GOVERNOR_REDIS_SENTINEL=1 (CI; a missing redis-server fails the file), or where the other Redis
// tests run (REDIS_URL, GOVERNOR_REQUIRE_REDIS=1) and redis-server is on PATH.
const sentinels = sentinelTests();

const LEASE = 30_000;
const claimAt = (now = Date.now(), allowUncertain = false) => ({
  now,
  allowUncertain,
  leaseMs: LEASE,
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe.runIf(sentinels.run)("RedisStore through Redis Sentinel", { timeout: 120_000 }, () => {
  let local: LocalSentinel;
  let shared: ReturnType<typeof createSentinel>;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    local = await startLocalSentinel();
    shared = await local.client();
  }, 90_000);
  afterAll(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await local?.stop();
  });
  async function open(
    options: Omit<RedisStoreOptions, "client" | "url"> = {},
    client: ReturnType<typeof createSentinel> = shared,
  ) {
    const store = createRedisStore({
      client,
      prefix: `gov-test:${randomUUID()}:`,
      commandTimeoutMs: 2_000,
      ...options,
    });
    stores.push(store);
    return store;
  }
  /** Kills the primary, waits for the sentinels to promote the replica, restarts it as one. */
  async function failover(): Promise<{ from: number; to: number }> {
    const from = await local.primary();
    await local.kill(from);
    const to = await local.settled({ from });
    await local.restart(from, to);
    await local.settled();
    return { from, to };
  }
  /**
   * Cuts the replica off the primary (a wrong masterauth, then its link dropped: it cannot
   * resync), so what the primary writes next never reaches it; answers how to undo it.
   */
  async function isolateReplica(): Promise<() => Promise<void>> {
    const replica = local.replicaOf(await local.primary());
    await local.command(replica, ["CONFIG", "SET", "masterauth", "wrong"]);
    await local.command(replica, ["CLIENT", "KILL", "TYPE", "master"]);
    return async () => {
      await local.command(replica, ["CONFIG", "SET", "masterauth", ""]);
    };
  }

  describe("the contract", () => {
    describeStoreContract("RedisStore through Sentinel", async (o) =>
      open({
        // The contract's bursts (500 commands at once, each waiting for the replica) took over
        // 2 s on a loaded machine; the failover tests below keep the short timeout they test.
        commandTimeoutMs: 10_000,
        retentionMs: o.retentionMs,
        maxUnsettled: o.maxUnsettled,
        maxOutcomes: o.maxOutcomes,
      }),
    );
  });

  it("sends a WAIT only on the connection that ran the script before it", async () => {
    const transport = sentinelTransport(shared);
    const session = transport.session();
    const key = `gov-test:${randomUUID()}`;
    expect(await session(undefined, ["SET", key, "1"], 2_000)).toBe("OK");
    expect(Number(await session(undefined, ["WAIT", "1", "1000"], 2_000))).toBe(1);
    // The connection that wrote breaks; the client reconnects by itself.
    const before = transport.primariesId();
    await local.command(await local.primary(), ["CLIENT", "KILL", "TYPE", "normal"]);
    for (let i = 0; ; i++) {
      try {
        await transport.send(undefined, ["PING"], 2_000);
        break;
      } catch (error) {
        // The first command after the break may be handed to the new connection: refused.
        if (!(error instanceof ConnectionChanged) && i > 50) throw error;
        await sleep(20);
      }
    }
    // A new connection is a new generation: the store runs its checks at connect again.
    expect(transport.primariesId()).not.toBe(before);
    // On the new connection WAIT answers at once for writes it never made (this is what the
    // session prevents): one replica "has" them.
    expect(Number(await transport.send(undefined, ["WAIT", "1", "1000"], 2_000))).toBe(1);
    // The session that wrote on the old connection refuses to send its WAIT on the new one.
    const error = await rejection(session(undefined, ["WAIT", "1", "1000"], 2_000));
    expect(error).toBeInstanceOf(ConnectionChanged);
  });

  it("does not send again a command whose connection broke while it ran", async () => {
    const transport = sentinelTransport(shared);
    const list = `gov-test:${randomUUID()}`;
    await transport.send(undefined, ["PING"], 2_000);
    // A BLPOP in flight (it pops what the list gets within 5 s)...
    const pop = transport.send(undefined, ["BLPOP", list, "5"], 8_000);
    const outcome = pop.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await sleep(200);
    // ...loses its connection: node-redis's Sentinel client would send it again on the next.
    await local.command(await local.primary(), ["CLIENT", "KILL", "TYPE", "normal"]);
    const settled = await outcome;
    expect(settled).toHaveProperty("error");
    const error = (settled as { error: unknown }).error;
    expect(error).toBeInstanceOf(ConnectionChanged);
    // Marked as sent (it may have run): the store does not send it once more either.
    expect((error as ConnectionChanged).sent).toBe(true);
    // Nothing pops what the list gets now.
    await local.command(await local.primary(), ["RPUSH", list, "x"]);
    await sleep(300);
    expect(await local.command(await local.primary(), ["LLEN", list])).toBe(1);
  });

  it("refuses a Sentinel client that takes turns over several connections, not one that reserves one", async () => {
    const pooled = createSentinel({
      name: SENTINEL_NAME,
      sentinelRootNodes: local.sentinelRootNodes,
      masterPoolSize: 2,
    });
    pooled.on("error", () => {});
    await pooled.connect();
    const reserved = createSentinel({
      name: SENTINEL_NAME,
      sentinelRootNodes: local.sentinelRootNodes,
      masterPoolSize: 2,
      reserveClient: true,
    });
    reserved.on("error", () => {});
    await reserved.connect();
    try {
      const store = await open({}, pooled);
      let error: unknown;
      for (let i = 0; i < 4 && error === undefined; i++) {
        error = await store.claim(`k-${i}`, "h", claimAt()).then(
          () => undefined,
          (e: unknown) => e,
        );
      }
      expect((error as StoreError).reason).toBe("misconfigured");
      expect((error as Error).message).toMatch(/masterPoolSize 1 \(the default\) or reserveClient/);
      const fine = await open({}, reserved);
      for (let i = 0; i < 4; i++) {
        expect((await fine.claim(`k-${i}`, "h", claimAt())).status).toBe("claimed");
      }
    } finally {
      await pooled.destroy();
      await reserved.destroy();
    }
  });

  it("refuses a client that is not a node-redis 5 Sentinel client, and one not connected", async () => {
    expect(() =>
      createRedisStore({ client: { getSentinelNode: () => undefined } as never }),
    ).toThrow(/the Sentinel client has no _execute: pass a node-redis 5 createSentinel\(\) client/);
    const idle = createSentinel({
      name: SENTINEL_NAME,
      sentinelRootNodes: local.sentinelRootNodes,
    });
    const error = await rejection(createRedisStore({ client: idle }).get("k"));
    expect((error as StoreError).reason).toBe("unavailable");
    expect((error as Error).message).toMatch(/the Sentinel client is not connected/);
  });

  it("leases run on the server's clock: a worker 11 minutes ahead takes over nothing in flight", async () => {
    const prefix = `gov-test:${randomUUID()}:`;
    const behind = await open({ prefix });
    const ahead = await open({ prefix });
    const minutes = 60_000;
    const held = await behind.claim("job", "h", {
      now: Date.now() - 5 * minutes,
      allowUncertain: false,
      leaseMs: 10 * minutes,
    });
    expect(held.status).toBe("claimed");
    const taken = await ahead.claim("job", "h", {
      now: Date.now() + 11 * minutes,
      allowUncertain: true,
      leaseMs: 10 * minutes,
    });
    expect(taken.status).toBe("in_flight");
  });

  it("by default (the primary has a replica: WAIT 1) refuses a claim no replica got", async () => {
    const store = await open({ commandTimeoutMs: 600 });
    expect((await store.claim("warm", "h", claimAt())).status).toBe("claimed");
    const undo = await isolateReplica();
    try {
      const error = await rejection(store.claim("job", "h", claimAt()));
      expect((error as StoreError).reason).toBe("unavailable");
      expect((error as Error).message).toMatch(/only 0 of 1 replicas confirmed/);
    } finally {
      await undo();
      await local.settled();
    }
    // Once the replica is back, the same key: its claim stayed pending on the primary, so it is
    // in flight, never claimed a second time.
    expect((await store.claim("job", "h", claimAt())).status).toBe("in_flight");
  });

  it("answers no claim for a WAIT that went out on another connection than the claim", async () => {
    const store = await open({ commandTimeoutMs: 3_000 });
    expect((await store.claim("warm", "h", claimAt())).status).toBe("claimed");
    const primary = await local.primary();
    const replica = local.replicaOf(primary);
    // The replica is frozen: still connected, it acknowledges nothing, so the claim's WAIT waits.
    local.signal(replica, "SIGSTOP");
    try {
      const claim = store.claim("job", "h", claimAt()).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      await sleep(500);
      // The connection the claim and its WAIT went out on breaks. node-redis would send the WAIT
      // again on the next connection, where it answers at once: 1 replica "has" the claim.
      await local.command(primary, ["CLIENT", "KILL", "TYPE", "normal"]);
      const outcome = await claim;
      expect(outcome).toHaveProperty("error");
      const error = (outcome as { error: unknown }).error;
      expect((error as StoreError).reason).toBe("unavailable");
      expect((error as Error).message).toMatch(/the connection to Redis is down or broke/);
    } finally {
      local.signal(replica, "SIGCONT");
    }
    await local.settled();
  });

  describe("failover", () => {
    it("checks the promoted replica before its first command: an evicting one is refused", async () => {
      const store = await open();
      expect((await store.claim("before", "h", claimAt())).status).toBe("claimed");
      const replica = local.replicaOf(await local.primary());
      await local.command(replica, ["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
      let to: number | undefined;
      try {
        ({ to } = await failover());
        const error = await rejection(store.claim("after", "h", claimAt()));
        expect((error as StoreError).reason).toBe("misconfigured");
        expect((error as Error).message).toMatch(/maxmemory-policy is allkeys-lru/);
      } finally {
        await local.command(to ?? replica, ["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      }
      // Fixed on the server: the next operation checks again and goes on.
      expect((await store.claim("after", "h", claimAt())).status).toBe("claimed");
      expect((await store.entry("before"))?.state).toBe("pending");
    });

    it("with waitForReplicas 0, a failover that lost a worker's claim and settle is detected, whatever was written since", async () => {
      const prefix = `gov-test:${randomUUID()}:`;
      const a = await open({ prefix, waitForReplicas: 0 }, await local.client());
      const b = await open({ prefix, waitForReplicas: 0 }, await local.client());
      await b.claim("warm-b", "h", claimAt());
      await a.claim("warm-a", "h", claimAt());
      const undo = await isolateReplica();
      // A claims the job, runs it and settles it: the replica never gets either.
      expect((await a.claim("job", "h", claimAt())).status).toBe("claimed");
      await a.settle("job", "succeeded", { now: Date.now(), result: "done" });
      const from = await local.primary();
      await local.kill(from);
      const to = await local.settled({ from });
      await undo();
      await local.restart(from, to);
      await local.settled();
      // B, which saw none of A's writes, is not refused: its claim of the job answers claimed
      // (what waitForReplicas 0 risks; the default waits for the replica).
      expect((await b.claim("job", "h", claimAt())).status).toBe("claimed");
      // B writes on: the epoch's number goes well past what A saw.
      for (let i = 0; i < 20; i++) await b.claim(`more-${i}`, "h", claimAt());
      // A's next operation finds its writes gone, and marks the ledger lost.
      const error = await rejection(a.claim("next", "h", claimAt()));
      expect((error as StoreError).reason).toBe("ledger_lost");
      expect((error as Error).message).toMatch(/went back in time/);
      // From then on every worker is refused, B included.
      const refused = await rejection(b.claim("after", "h", claimAt()));
      expect((refused as StoreError).reason).toBe("ledger_lost");
    });

    /**
     * 8 workers (each with its own Sentinel client) claim and settle 400 jobs, each delivered
     * twice and again after a store error (not after `ledger_lost`: that needs a person); the
     * primary is killed after 150 answered claims (its replica cut off after 100 when `isolate`),
     * the sentinels promote the replica, and the old primary comes back as its replica.
     */
    async function underLoad(waitForReplicas: number, isolate: boolean) {
      const prefix = `gov-test:${randomUUID()}:`;
      const workers = await Promise.all(
        Array.from({ length: 8 }, async () =>
          open({ prefix, waitForReplicas, commandTimeoutMs: 1_000 }, await local.client()),
        ),
      );
      let isolated: Promise<() => Promise<void>> | undefined;
      let killed: Promise<void> | undefined;
      const victim = await local.primary();
      const restarted = (async () => {
        while (killed === undefined) await sleep(20);
        await killed;
        const to = await local.settled({ from: victim });
        await (await isolated)?.();
        await local.restart(victim, to);
        await local.settled();
      })();
      const load = await runFailoverLoad(workers, {
        jobs: 400,
        retries: 60,
        claimAt,
        // A claim refused as `ledger_lost` is not tried again: that needs a person.
        requeue: (reason) => reason !== "ledger_lost",
        onAnswered: (answered) => {
          if (isolate && answered === 100) isolated ??= isolateReplica();
          if (answered === 150) {
            killed ??= (async () => {
              await isolated;
              await local.kill(victim);
            })();
          }
        },
      });
      await restarted;
      expect(await local.primary()).not.toBe(victim);

      // Every claim the store answered that the ledger no longer holds (or holds unsettled after
      // an answered settle), and every job that ran twice.
      const reader = await open({ prefix, waitForReplicas: 0 });
      return { load, ...(await failoverLosses(reader, load)) };
    }

    it("8 workers claim and settle while the primary is killed: no write twice, no answered claim lost (waitForReplicas 1)", async () => {
      const { load, lost, twice } = await underLoad(1, false);
      expect(twice).toEqual([]);
      expect(lost).toEqual([]);
      expect(load.errors.get("ledger_lost") ?? 0).toBe(0);
      // The failover happened under load: operations failed while it ran, and most jobs ran.
      expect(errorCount(load)).toBeGreaterThan(0);
      expect(load.runs.size).toBeGreaterThan(300);
    });

    it("with waitForReplicas 0 and the replica cut off, a failover under load loses answered claims: the loss is detected and no write runs twice", async () => {
      const { load, lost, twice } = await underLoad(0, true);
      // The promoted replica never got the last claims and settles the workers were answered.
      expect(lost.length).toBeGreaterThan(0);
      // Every worker had written past what it holds: the first to use it marks the ledger lost,
      // and every worker is refused from then on instead of claiming those keys again.
      expect(load.errors.get("ledger_lost") ?? 0).toBeGreaterThan(0);
      expect(twice).toEqual([]);
    });
  });
});
