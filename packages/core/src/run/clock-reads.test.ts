import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor } from "./governor.ts";
import type { AttemptContext } from "./types.ts";

/**
 * A call's synchronous steps share one reading of the governor's clock (run-state.ts
 * `shareClock`): preflight's reading admits the first attempt and counts it against the retry
 * budget. A step after an await reads the clock again. The clock is injected: these are about
 * which reading a step takes, not about time passing.
 */

const ok = { content: [{ type: "text", text: "ok" }] };

/** The memory store behind promises: every step of a call that touches it awaits. */
function laterStore(onGet: () => void): Store {
  const inner = createMemoryStore();
  return {
    get: async (k) => {
      onGet();
      return inner.get(k);
    },
    set: async (k, v, ttl) => inner.set(k, v, ttl),
    increment: async (k, by, ttl) => inner.increment(k, by, ttl),
    claim: async (k, h, o) => inner.claim(k, h, o),
    settle: async (k, state, o) => inner.settle(k, state, o),
    entry: async (k) => inner.entry(k),
  };
}

describe("the clock a call reads", () => {
  it("once for a call that answers at once, with a synchronous store", async () => {
    let reads = 0;
    const governor = createGovernor(
      { tools: { t: { effect: "read_only" } } },
      {
        metrics: false,
        now: () => {
          reads += 1;
          return Date.now();
        },
      },
    );
    const run = governor.startRun();
    reads = 0;
    for (let i = 0; i < 10; i++) {
      expect((await run.call({ tool: "t", args: { i } }, async () => ok)).kind).toBe("ok");
    }
    expect(reads).toBe(10);
  });

  it("again before the attempt when preflight awaited the store: a deadline passed meanwhile refuses it", async () => {
    let t = 1_000_000;
    // The breaker read takes 10 s of the run's 5 s.
    const store = laterStore(() => {
      t += 10_000;
    });
    const governor = createGovernor(
      { tools: { t: { effect: "read_only" } }, budgets: { wallTimeMs: 5_000 } },
      { metrics: false, now: () => t, store },
    );
    const run = governor.startRun();
    let sent = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      sent += 1;
      return ok;
    });
    expect(sent).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
  });

  it("gives the attempt the ms left at its admission, a fraction kept, a small integer as one", async () => {
    for (const [start, deadline, left] of [
      [1_000, 6_000, 5_000],
      [1_000.25, 6_000.75, 5_000.5],
      [2 ** 40, 2 ** 40 + 3, 3],
    ] as const) {
      const governor = createGovernor(
        { tools: { t: { effect: "read_only" } } },
        { metrics: false, now: () => start },
      );
      const run = governor.startRun({ deadline });
      let seen: number | undefined;
      await run.call({ tool: "t" }, async (ctx: AttemptContext) => {
        seen = ctx.remainingMs;
        return ok;
      });
      expect(seen).toBe(left);
    }
  });
});
