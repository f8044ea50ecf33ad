/**
 * `governor.settle(key, …)` is for a person who checked a write in doubt. A key whose call is
 * still in flight (its entry `pending`, its holder's lease not run out) is not in doubt yet: the
 * write may still commit after the check.
 */
import { createGovernor, createMemoryStore } from "@governor/core";
import { describe, expect, it } from "vitest";

describe("settling a key by hand", () => {
  // Settling a pending key whose holder's lease has not run out would let the same logical call
  // (same scope and callId) be claimed afresh and executed a second time while the first attempt
  // is still in flight: the settle is refused instead (idempotency_conflict).
  it("refuses a key whose call is still in flight: the same logical call does not run twice", async () => {
    const store = createMemoryStore();
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating" } } },
      { metrics: false, store },
    );
    const call = { tool: "pay", args: { amount: 5 }, callId: "call-1" };
    let executions = 0;
    let key: string | undefined;
    let answer = (): void => undefined;
    const inFlight = governor.startRun({ idempotencyScope: "job-1" }).call(call, async (ctx) => {
      executions += 1;
      key = ctx.idempotencyKey;
      await new Promise<void>((resolve) => {
        answer = resolve;
      });
      return { content: [{ type: "text", text: "paid" }] };
    });
    await expect.poll(() => key).toBeDefined();
    expect((await store.entry(key as string))?.state).toBe("pending");
    // A person looks, sees no payment yet, and settles the key as failed.
    const refused = await governor.settle(key as string, "failed").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(String(refused)).toMatch(/still in flight/);
    const again = await governor.startRun({ idempotencyScope: "job-1" }).call(call, async () => {
      executions += 1;
      return { content: [{ type: "text", text: "paid" }] };
    });
    answer();
    await inFlight;
    expect(again.kind).not.toBe("ok");
    expect(executions).toBe(1);
  });

  it("settles a pending key whose holder's lease ran out (the holder died: a write in doubt)", async () => {
    const store = createMemoryStore();
    const governor = createGovernor({}, { metrics: false, store });
    // Claimed a minute ago with a 1 s lease, never settled.
    await store.claim("gk_dead", "h", {
      now: Date.now() - 60_000,
      allowUncertain: false,
      leaseMs: 1_000,
    });
    expect((await store.entry("gk_dead"))?.leaseMs).toBe(1_000);
    await governor.settle("gk_dead", "failed");
    expect((await store.entry("gk_dead"))?.state).toBe("failed");
  });
});
