import { randomUUID } from "node:crypto";
import { createGovernor, HostError } from "@governor/core";
import { afterAll, describe, expect, it } from "vitest";
import { createRedisStore, type RedisStore } from "./redis-store.ts";
import { sharedRedis } from "./testing-server.ts";

// A real server at REDIS_URL (skipped without one, failing under GOVERNOR_REQUIRE_REDIS=1).
const redis = await sharedRedis("RedisStore deadline settle");
const available = redis.problem === undefined;

describe.runIf(available)("issue 26.7: a write cut by the run's deadline, on RedisStore", () => {
  const store = available
    ? createRedisStore({ url: redis.url as string, prefix: `governor-test:${randomUUID()}:` })
    : undefined;
  afterAll(async () => {
    await store?.close();
  });

  it("records its key uncertain and stops uncertain_mutation (was: HostError 'no answer within 0 ms')", async () => {
    const governor = createGovernor(
      { tools: { charge: { effect: "mutating" } }, budgets: { wallTimeMs: 300 } },
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
