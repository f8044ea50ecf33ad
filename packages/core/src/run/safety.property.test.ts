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

/**
 * Issue 26: a host model. The host (a model behind an adapter or the proxy) means each write once
 * and resends it, under a new call id each time, until it sees it done: plainly, right after
 * cancelling it (one stdin write), in the next window (a new run of the same scope), after the
 * proxy's TTL and the ledger's lease have passed, after a restart of the proxy (a new governor on
 * the same store); the server loses answers, answers "in progress" for a key, refuses, or hangs.
 * Whatever happens: at most one effect per intended write; and once a person has settled every
 * key the runs named (stops and the event log), every write that made no effect can be sent.
 */
type HostStep =
  | { readonly kind: "send" | "cancel_resend"; readonly intent: number }
  | { readonly kind: "window" | "ttl" | "restart" };
type Answer = "ok" | "lost_after_commit" | "in_progress" | "fail_before" | "hang";

describe("a host that resends (issue 26)", () => {
  it("never makes an intended write twice, and leaves none refused that a person cannot settle", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(
          fc.constantFrom<Answer>("ok", "lost_after_commit", "in_progress", "fail_before", "hang"),
          {
            minLength: 1,
            maxLength: 10,
          },
        ),
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constantFrom("send" as const, "cancel_resend" as const),
              intent: fc.integer({ min: 0, max: 2 }),
            }),
            fc.record({
              kind: fc.constantFrom("window" as const, "ttl" as const, "restart" as const),
            }),
          ),
          { minLength: 1, maxLength: 10 },
        ),
        async (honorsKeys, answers, steps: HostStep[]) => {
          const store = createMemoryStore();
          let skew = 0;
          const now = () => Date.now() + skew;
          const effects = new Map<number, number>();
          const committedKeys = new Set<string>();
          const named = new Set<string>();
          let n = 0;
          let clean = false;
          const serving = new Set<Promise<unknown>>();
          const server = (intent: number, key: string | undefined, signal: AbortSignal) => {
            const handled = handle(intent, key, signal);
            serving.add(handled);
            const forget = () => serving.delete(handled);
            handled.then(forget, forget);
            return handled;
          };
          const handle = async (intent: number, key: string | undefined, signal: AbortSignal) => {
            const answer: Answer = clean ? "ok" : (answers[n++ % answers.length] ?? "ok");
            await sleep(1);
            if (answer === "fail_before") {
              return {
                content: [{ type: "text", text: "503 Service Unavailable" }],
                isError: true,
              };
            }
            if (answer === "in_progress") {
              return {
                content: [
                  {
                    type: "text",
                    text: `409 Conflict: another request with idempotency key ${key} is still being processed. Retry in a few seconds.`,
                  },
                ],
                isError: true,
              };
            }
            const dedup = honorsKeys && key !== undefined && committedKeys.has(key);
            if (!dedup) effects.set(intent, (effects.get(intent) ?? 0) + 1);
            if (key !== undefined) committedKeys.add(key);
            if (answer === "hang") {
              await new Promise((_, reject) => {
                if (signal.aborted) reject(signal.reason);
                signal.addEventListener("abort", () => reject(signal.reason), { once: true });
              });
            }
            if (answer === "lost_after_commit") throw reset();
            return { content: [{ type: "text", text: `done:${intent}` }] };
          };
          const makeGovernor = () =>
            createGovernor(
              {
                budgets: { wallTimeMs: 60_000 },
                tools: {
                  charge: {
                    effect: "mutating",
                    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
                    idempotency: { honorsKeys },
                    // The breaker pauses a failing tool for every write: not what is tested here.
                    breaker: { threshold: 1_000 },
                  },
                },
              },
              {
                store,
                now,
                metrics: false,
                onHostError: () => undefined,
                onEvent: (e) => {
                  const key = (e as { idempotencyKey?: unknown }).idempotencyKey;
                  if (typeof key === "string") named.add(key);
                },
              },
            );
          let governor = makeGovernor();
          const open = () => governor.startRun({ idempotencyScope: "host", deadline: now() + 80 });
          let run = open();
          const done = new Set<number>();
          let ids = 0;
          const send = (intent: number, signal?: AbortSignal) => {
            const call = run.call(
              {
                tool: "charge",
                args: { intent },
                callId: `call_${++ids}`,
                ...(signal !== undefined && { signal }),
              },
              (ctx) => server(intent, ctx.idempotencyKey, ctx.signal),
            );
            return within(call, 5_000, `intent ${intent}`).then((outcome) => {
              if (outcome.kind === "ok") done.add(intent);
              if (outcome.kind === "stop" && outcome.idempotencyKey !== undefined) {
                named.add(outcome.idempotencyKey);
              }
              return outcome;
            });
          };
          for (const step of steps) {
            // A stop ends the run: the host's next call starts the next one (as the proxy does).
            if (run.ended) run = open();
            if (step.kind === "window") {
              run.end();
              run = open();
            } else if (step.kind === "ttl") {
              skew += 20 * 60_000; // past --stop-ttl and the ledger's 15-minute lease cap
            } else if (step.kind === "restart") {
              run.end();
              governor = makeGovernor();
              run = open();
            } else if ("intent" in step && !done.has(step.intent)) {
              if (step.kind === "send") {
                await send(step.intent);
              } else {
                // Cancelled while its attempt is out (a cancel that crosses the answer on the
                // wire is the host's to reconcile: its answer was given).
                const cancel = new AbortController();
                const first = send(step.intent, cancel.signal);
                cancel.abort();
                // The identical call in the same tick, in the run the host's next call gets.
                if (run.ended) run = open();
                const again = send(step.intent);
                await Promise.all([first, again]);
              }
            }
          }
          run.end();

          for (const [intent, count] of effects) {
            expect(count, `effects of intent ${intent}`).toBeLessThanOrEqual(1);
          }
          // A person checks every key named, once the server is done with its requests, and
          // settles it by what the server shows.
          await within(Promise.allSettled([...serving]), 3_000, "the server's requests");
          for (const key of named) {
            await governor.settle(key, committedKeys.has(key) ? "succeeded" : "failed");
          }
          // Every write that made no effect can now be sent, and is.
          clean = true;
          for (const intent of [0, 1, 2]) {
            if ((effects.get(intent) ?? 0) > 0 || done.has(intent)) continue;
            run = open();
            const outcome = await send(intent);
            run.end();
            expect(outcome, `intent ${intent} after the person settled`).toMatchObject({
              kind: "ok",
            });
            expect(effects.get(intent)).toBe(1);
          }
        },
      ),
      { numRuns: Number(process.env.SAFETY_RUNS ?? 40) },
    );
  }, 120_000);
});
