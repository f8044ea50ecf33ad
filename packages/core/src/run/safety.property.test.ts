import { getEventListeners } from "node:events";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor, type VerifyResult } from "./governor.ts";
import type { CallOutcome, Run } from "./run.ts";

/**
 * The safety promises under random interleavings (issue 8, "Done means"): calls of two workers on
 * one ledger, lost answers, hangs, retries, aborts, `run.end()`, store outages, a clock that jumps
 * past the ledger's lease, and a third run in another scope reusing the same call ids. Whatever
 * happens: at most one effect per logical call, no result replayed into another logical call,
 * every `run.call` resolves, no timer or abort listener is left, and no canary secret reaches the
 * model.
 */

type Fault = "ok" | "lost_after_commit" | "fail_before" | "crash_before" | "hang" | "leaky_error";
type Variant = "bare" | "keyed" | "verify" | "read_only";
type Event =
  | { readonly at: number; readonly kind: "end" | "abort"; readonly run: number }
  | { readonly at: number; readonly kind: "store_down" | "store_up" | "clock_jump" };

const CANARY = "canary7f3b9c";
const reset = () => Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A memory store that can be taken down: every operation then throws a text full of secrets. */
function flakyStore(): { store: Store; down: (on: boolean) => void } {
  const inner = createMemoryStore();
  let isDown = false;
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => R) =>
    (...args: A): R => {
      if (isDown) {
        throw new Error(`connect ECONNREFUSED redis://admin:${CANARY}@10.0.0.5:6379`);
      }
      return fn(...args);
    };
  const store: Store = {
    get: guard((k: string) => inner.get(k)),
    set: guard((k: string, v: unknown, t?: number) => inner.set(k, v, t)),
    increment: guard((k: string, b: number, t: number) => inner.increment(k, b, t)),
    claim: guard((k: string, h: string, o: Parameters<Store["claim"]>[2]) => inner.claim(k, h, o)),
    settle: guard(
      (k: string, s: Parameters<Store["settle"]>[1], o: Parameters<Store["settle"]>[2]) =>
        inner.settle(k, s, o),
    ),
    entry: guard((k: string) => inner.entry(k)),
  };
  return { store, down: (on) => (isDown = on) };
}

/** The call's outcome, or a failure naming the call when it has not resolved in `ms`. */
async function within<T>(call: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`run.call did not resolve (${what})`)), ms);
  });
  try {
    return await Promise.race([call, late]);
  } finally {
    clearTimeout(timer);
  }
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

describe("the safety promises under random interleavings", () => {
  it("hold for every schedule of calls, faults, aborts, ends, outages and lease expiry", async () => {
    const baseline = timers();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Variant>("bare", "keyed", "verify", "read_only"),
        fc.array(
          fc.constantFrom<Fault>(
            "ok",
            "lost_after_commit",
            "fail_before",
            "crash_before",
            "hang",
            "leaky_error",
          ),
          { minLength: 1, maxLength: 12 },
        ),
        // Per run (two workers in scope A, one run in scope B): which logical calls it makes.
        fc.array(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 4 }), {
          minLength: 3,
          maxLength: 3,
        }),
        fc.array(
          fc.oneof(
            fc.record({
              at: fc.integer({ min: 0, max: 40 }),
              kind: fc.constantFrom("end" as const, "abort" as const),
              run: fc.integer({ min: 0, max: 2 }),
            }),
            fc.record({
              at: fc.integer({ min: 0, max: 40 }),
              kind: fc.constantFrom(
                "store_down" as const,
                "store_up" as const,
                "clock_jump" as const,
              ),
            }),
          ),
          { maxLength: 5 },
        ),
        async (variant, faults, plans, events: Event[]) => {
          const { store, down } = flakyStore();
          let skew = 0;
          const now = () => Date.now() + skew;
          // Effects per logical call (scope:callId); a key-honoring server writes once per key.
          const effects = new Map<string, number>();
          const keysSeen = new Set<string>();
          let n = 0;
          const server = async (
            logical: string,
            key: string | undefined,
            signal: AbortSignal,
          ): Promise<unknown> => {
            const fault = faults[n++ % faults.length] ?? "ok";
            await sleep(1);
            if (fault === "crash_before") throw reset();
            if (fault === "fail_before") {
              return {
                content: [{ type: "text", text: "503 Service Unavailable" }],
                isError: true,
              };
            }
            if (fault === "leaky_error") {
              return {
                content: [
                  {
                    type: "text",
                    text: `Invalid date. Authorization: Bearer sk-${CANARY}0123456789abcdef at /home/app/${CANARY}.js`,
                  },
                ],
                isError: true,
              };
            }
            if (variant !== "read_only") {
              const dedup = variant === "keyed" && key !== undefined && keysSeen.has(key);
              if (!dedup) effects.set(logical, (effects.get(logical) ?? 0) + 1);
              if (key !== undefined) keysSeen.add(key);
            }
            if (fault === "hang") {
              await new Promise((_, reject) =>
                signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
              );
            }
            if (fault === "lost_after_commit") throw reset();
            return { content: [{ type: "text", text: `done:${logical}` }] };
          };
          const policy = {
            budgets: { wallTimeMs: 60_000 },
            tools: {
              w: {
                effect: variant === "read_only" ? ("read_only" as const) : ("mutating" as const),
                retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
                idempotency: { honorsKeys: variant === "keyed", verify: variant === "verify" },
              },
            },
          };
          const makeGovernor = () =>
            createGovernor(policy, {
              store,
              now,
              metrics: false,
              storeTimeoutMs: 50,
              onHostError: () => undefined,
              verify: {
                w: async (ctx): Promise<VerifyResult> => {
                  const logical = (ctx.args as { logical: string }).logical;
                  return (effects.get(logical) ?? 0) > 0
                    ? {
                        effect: "present",
                        result: { content: [{ type: "text", text: `done:${logical}` }] },
                      }
                    : { effect: "absent" };
                },
              },
            });
          const scopes = ["A", "A", "B"];
          const controllers = scopes.map(() => new AbortController());
          const runs: Run[] = scopes.map((scope, i) =>
            makeGovernor().startRun({
              idempotencyScope: scope,
              signal: controllers[i]?.signal as AbortSignal,
              deadline: Date.now() + 400,
            }),
          );
          const outcomes: { logical: string; outcome: CallOutcome<unknown> }[] = [];
          const work = runs.map(async (run, i) => {
            const scope = scopes[i] as string;
            for (const c of plans[i] ?? []) {
              const logical = `${scope}:c${c}`;
              const call = run.call({ tool: "w", args: { logical }, callId: `c${c}` }, (ctx) =>
                server(logical, ctx.idempotencyKey, ctx.signal),
              );
              const outcome = await within(call, 5_000, logical);
              outcomes.push({ logical, outcome });
              if (outcome.kind === "stop") break;
            }
          });
          const chaos = [...events]
            .sort((a, b) => a.at - b.at)
            .map(async (e) => {
              await sleep(e.at);
              if (e.kind === "end") runs[e.run]?.end();
              else if (e.kind === "abort") controllers[e.run]?.abort();
              else if (e.kind === "store_down") down(true);
              else if (e.kind === "store_up") down(false);
              else skew += 20 * 60_000; // past the 15-minute lease cap
            });
          await Promise.all([...work, ...chaos]);
          for (const run of runs) run.end();

          // At most one effect per logical call (reads make none).
          for (const [logical, count] of effects) {
            expect(count, `effects of ${logical}`).toBeLessThanOrEqual(1);
          }
          for (const { logical, outcome } of outcomes) {
            // No result of another logical call (the other scope, or another callId).
            if (outcome.kind === "ok" && outcome.value !== undefined) {
              expect(JSON.stringify(outcome.value)).toContain(`done:${logical}`);
            }
            // Nothing secret reaches the model.
            if (outcome.kind !== "ok") {
              expect(outcome.result.content[0].text).not.toContain(CANARY);
              expect(outcome.result.content[0].text).not.toMatch(/10\.0\.0\.5|redis:/);
            }
          }
          // Nothing left behind: no abort listener on the hosts' signals.
          for (const ac of controllers) {
            expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
          }
        },
      ),
      { numRuns: Number(process.env.SAFETY_RUNS ?? 40) },
    );
    // Every timer armed by the runs was cleared once their calls resolved and the runs ended.
    await sleep(10);
    expect(timers()).toBeLessThanOrEqual(baseline);
  }, 120_000);
});
