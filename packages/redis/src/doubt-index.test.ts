import { randomUUID } from "node:crypto";
import { type AttemptContext, createGovernor } from "@governor/core";
import { afterAll, describe, expect, it } from "vitest";
import { createRedisStore, type RedisStore } from "./redis-store.ts";
import { sharedRedis } from "./testing-server.ts";

// A real server at REDIS_URL (skipped without one, failing under GOVERNOR_REQUIRE_REDIS=1).
const redis = await sharedRedis("RedisStore index of writes in doubt");
const available = redis.problem === undefined;

describe.runIf(available)("issue 26.1 on RedisStore: two workers, one scope", () => {
  const stores: RedisStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
  });

  it("a write in doubt on one worker refuses the identical write of another, under any callId, until a person settles it", async () => {
    const prefix = `governor-test:${randomUUID()}:`;
    const worker = () => {
      const store = createRedisStore({ url: redis.url as string, prefix });
      stores.push(store);
      return createGovernor(
        { tools: { charge: { effect: "mutating", retry: { attempts: 1 } } } },
        { store, metrics: false },
      );
    };
    const [a, b] = [worker(), worker()];
    let charges = 0;
    const lost = async () => {
      charges += 1;
      throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    };
    const paid = async (_ctx: AttemptContext) => {
      charges += 1;
      return { content: [{ type: "text", text: "charged" }] };
    };
    const call = (callId: string) => ({ tool: "charge", args: { amount: 5 }, callId });
    const first = await a.startRun({ idempotencyScope: "job-9" }).call(call("step-1"), lost);
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = first.kind === "stop" ? (first.idempotencyKey as string) : "";
    const again = await b.startRun({ idempotencyScope: "job-9" }).call(call("step-1b"), paid);
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(charges).toBe(1);
    await b.settle(key, "failed");
    expect(
      await b.startRun({ idempotencyScope: "job-9" }).call(call("step-1c"), paid),
    ).toMatchObject({
      kind: "ok",
    });
    expect(charges).toBe(2);
  });
});
