import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createGovernor, type VerifyResult } from "../run/governor.ts";
import { createMemoryStore } from "./memory-store.ts";

/**
 * Random interleavings of attempts, lost answers and retries over one logical call, taken up by
 * one to three workers sharing a ledger, never produce two effects.
 */

type Fault = "ok" | "lost_after_commit" | "fail_before" | "crash_before";
type Variant = "bare" | "keyed" | "verify";

const reset = () => Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });

describe("ledger under random interleavings", () => {
  it("never produces two effects of one logical call", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.constantFrom<Fault>("ok", "lost_after_commit", "fail_before", "crash_before"), {
          minLength: 1,
          maxLength: 10,
        }),
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom<Variant>("bare", "keyed", "verify"),
        async (s, faults, workers, variant) => {
          const store = createMemoryStore();
          const effects: (string | undefined)[] = [];
          let n = 0;
          const server = async (key: string | undefined) => {
            const fault = faults[n++] ?? "ok";
            await s.schedule(Promise.resolve(), "sent");
            if (fault === "crash_before") throw reset();
            if (fault === "fail_before")
              return {
                content: [{ type: "text", text: "503 Service Unavailable" }],
                isError: true,
              };
            // A key-honoring server writes once per key and answers the original after that.
            if (!(variant === "keyed" && effects.includes(key))) effects.push(key);
            await s.schedule(Promise.resolve(), "committed");
            if (fault === "lost_after_commit") throw reset();
            return { content: [{ type: "text", text: "written" }] };
          };
          const verify = {
            w: async (): Promise<VerifyResult> =>
              effects.length > 0
                ? { effect: "present", result: { content: [] } }
                : { effect: "absent" },
          };
          const policy = {
            tools: {
              w: {
                effect: "mutating" as const,
                retry: { attempts: 4, baseDelayMs: 0 },
                idempotency: { honorsKeys: variant === "keyed", verify: variant === "verify" },
              },
            },
          };
          const calls = Array.from({ length: workers }, () =>
            createGovernor(policy, { store, verify, metrics: false, random: () => 0 })
              .startRun({ idempotencyScope: "job-1" })
              .call({ tool: "w", args: { x: 1 }, callId: "call-1" }, (ctx) =>
                server(ctx.idempotencyKey),
              ),
          );
          await s.waitFor(Promise.all(calls));
          const distinct = variant === "keyed" ? new Set(effects).size : effects.length;
          expect(distinct).toBeLessThanOrEqual(1);
          // Every worker got an answer for the model.
          for (const outcome of await Promise.all(calls))
            expect(["ok", "model", "stop"]).toContain(outcome.kind);
        },
      ),
      { numRuns: 300 },
    );
  });
});
