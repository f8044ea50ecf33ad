// Attacks on the index of writes in doubt (docs/idempotency.md, "A write in doubt") on a real
// Redis: two runs of one scope racing an identical write, and a person's settle freeing it.
import { randomUUID } from "node:crypto";
import { createGovernor } from "@governor/core";
import { createRedisStore, type RedisStore } from "@governor/redis";
import { afterAll, describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";

const redis = await sharedRedis("the index of writes in doubt on Redis");
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

describe.runIf(redis.problem === undefined)("writes in doubt on Redis", () => {
  const stores: RedisStore[] = [];
  const prefix = `governor-test:${randomUUID()}:`;
  const store = () => {
    const s = createRedisStore({ url: redis.url as string, prefix, requirePersistence: false });
    stores.push(s);
    return s;
  };
  const gov = (honorsKeys: boolean) =>
    createGovernor(
      {
        tools: {
          charge: { effect: "mutating", idempotency: { honorsKeys }, retry: { attempts: 1 } },
        },
      },
      { metrics: false, random: () => 0, store: store() },
    );
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
  });

  it("two workers of one scope racing an identical write under different call ids: one is sent", async () => {
    const scope = `race-${randomUUID()}`;
    let sent = 0;
    const charge = async () => {
      sent += 1;
      await new Promise((r) => setTimeout(r, 50));
      return ok("charged");
    };
    const outcomes = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        gov(false)
          .startRun({ idempotencyScope: scope })
          .call({ tool: "charge", args: { amount: 5 }, callId: `c${i}` }, charge),
      ),
    );
    expect(sent).toBe(1);
    expect(outcomes.filter((o) => o.kind === "ok")).toHaveLength(1);
  });

  it("a person's settle on another process frees the identical write; before it, it is refused", async () => {
    const scope = `settle-${randomUUID()}`;
    let sent = 0;
    const first = await gov(true)
      .startRun({ idempotencyScope: scope })
      .call({ tool: "charge", args: { amount: 7 }, callId: "c1" }, async () => {
        sent += 1;
        throw reset();
      });
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = first.kind === "stop" ? (first.idempotencyKey as string) : "";
    const charge = async () => {
      sent += 1;
      return ok("charged");
    };
    const refused = await gov(true)
      .startRun({ idempotencyScope: scope })
      .call({ tool: "charge", args: { amount: 7 }, callId: "c2" }, charge);
    expect(refused).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(sent).toBe(1);
    await gov(true).settle(key, "failed");
    const again = await gov(true)
      .startRun({ idempotencyScope: scope })
      .call({ tool: "charge", args: { amount: 7 }, callId: "c3" }, charge);
    expect(again).toMatchObject({ kind: "ok" });
    expect(sent).toBe(2);
  });
});
