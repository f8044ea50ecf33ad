/**
 * `governor.settle(key, …)` is for a person who checked a write in doubt. A key whose call is
 * still in flight (its entry `pending`, its holder's lease not run out) is not in doubt yet: the
 * write may still commit after the check.
 */
import { createGovernor, createMemoryStore } from "@governor/core";
import { describe, expect, it } from "vitest";

describe("settling a key by hand", () => {
  // A hole in run/governor.ts (settle), left to the run's owner: settle accepts a pending key
  // whose holder's lease has not run out, so the same logical call (same scope and callId) is
  // claimed afresh and executed a second time while the first attempt is still in flight.
  // Expected: refused with a GovernorError saying the call is still in flight (or the settle
  // kept from freeing the key until the lease ends).
  it.fails("refuses a key whose call is still in flight: the same logical call does not run twice", async () => {
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
    await governor.settle(key as string, "failed").catch(() => undefined);
    const again = await governor.startRun({ idempotencyScope: "job-1" }).call(call, async () => {
      executions += 1;
      return { content: [{ type: "text", text: "paid" }] };
    });
    answer();
    await inFlight;
    expect(again.kind).not.toBe("ok");
    expect(executions).toBe(1);
  });
});
