import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor } from "./governor.ts";

const ok = { content: [{ type: "text", text: "ok" }] };

/** The memory store answering synchronously, `onGet` called at each read (the breaker's). */
function syncStore(onGet: () => void): Store {
  const inner = createMemoryStore();
  return {
    get: (k) => {
      onGet();
      return inner.get(k);
    },
    set: (k, v, ttl) => inner.set(k, v, ttl),
    increment: (k, by, ttl) => inner.increment(k, by, ttl),
    claim: (k, h, o) => inner.claim(k, h, o),
    settle: (k, state, o) => inner.settle(k, state, o),
    entry: (k) => inner.entry(k),
  };
}

describe("a deadline that passes during preflight's synchronous steps", () => {
  it.each(["read_only", "mutating"] as const)(
    "refuses the first attempt (%s): preflight's reading is not the attempt's admission",
    async (effect) => {
      let t = 1_000_000;
      let reads = 0;
      // Reading the breaker (a synchronous store, slow) takes 10 s of the run's 5 s.
      const store = syncStore(() => {
        reads += 1;
        t += 10_000;
      });
      const governor = createGovernor(
        { tools: { t: { effect } }, budgets: { wallTimeMs: 5_000 } },
        { metrics: false, now: () => t, store },
      );
      const run = governor.startRun();
      let sent = 0;
      const outcome = await run.call({ tool: "t" }, async () => {
        sent += 1;
        return ok;
      });
      // The store was read synchronously during preflight (else this test proves nothing).
      expect(reads).toBeGreaterThan(0);
      expect(sent).toBe(0);
      expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
    },
  );
});
