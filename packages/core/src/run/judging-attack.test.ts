// Attacks on a failed attempt's one settle (failed-attempt.ts `resolveFailure`, ledger.ts
// `settle`): the key stays claimed while the attempt is judged, and is settled once, however the
// judging ends. Each test names what broke before its fix.
import { describe, expect, it } from "vitest";
import type { Failure } from "../judge/failure.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor } from "./governor.ts";

const lost = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const kindOf = (o: { kind: string; reason?: string }) => [o.kind, o.reason];

/**
 * A holder judging its failed attempt longer than its lease (a run whose wall time is longer than
 * the 15 min lease cap, a host hook or verify step that takes that long): another worker of the
 * scope takes the key over, sends, and leaves it in doubt. The holder's late settle must not free
 * it (its `claimedAt` guard holds only while the other attempt is pending).
 */
async function judgedPastLease(store: Store) {
  let t = 1_000_000;
  const now = () => t;
  const policy = {
    budgets: { wallTimeMs: 3_600_000 },
    tools: {
      pay: {
        effect: "mutating" as const,
        idempotency: { honorsKeys: true },
        retry: { attempts: 1 },
      },
    },
  };
  let answerHook = (): void => undefined;
  let hooked = 0;
  let key: string | undefined;
  // Worker A: its attempt is refused with a protocol error (certainty failed), and its host's
  // hook takes 16 minutes to answer.
  const a = createGovernor(policy, {
    metrics: false,
    store,
    now,
    onHostError: async () => {
      hooked += 1;
      await new Promise<void>((resolve) => {
        answerHook = resolve;
      });
      return undefined;
    },
  });
  const b = createGovernor(policy, { metrics: false, store, now });
  const call = { tool: "pay", args: { amount: 5 }, callId: "c1" };
  const sent: string[] = [];
  const first = a.startRun({ idempotencyScope: "job" }).call(call, async (ctx) => {
    sent.push("A");
    key = ctx.idempotencyKey;
    throw Object.assign(new Error("Invalid Request"), { code: -32600 });
  });
  await expect.poll(() => hooked).toBe(1);
  expect((await store.entry(key as string))?.state).toBe("pending");
  t += 16 * 60_000;
  // Worker B (the job redelivered): A's lease ran out, the tool honours keys, so B takes the
  // key over and sends; its answer is lost: its write is in doubt.
  const second = await b.startRun({ idempotencyScope: "job" }).call(call, async () => {
    sent.push("B");
    throw lost();
  });
  const afterB = (await store.entry(key as string))?.state;
  answerHook();
  const firstOutcome = await first;
  const afterA = (await store.entry(key as string))?.state;
  // The model of the job sends the same charge again under a new tool-call id: an identical
  // write while B's is in doubt must be refused.
  const third = await b
    .startRun({ idempotencyScope: "job" })
    .call({ ...call, callId: "c2" }, async () => {
      sent.push("C");
      return ok("paid");
    });
  return { second, afterB, firstOutcome, afterA, third, sent };
}

describe("a failed attempt judged longer than its lease", () => {
  it("does not free a key another worker took over and left in doubt (was: settled failed, the identical write sent)", async () => {
    const r = await judgedPastLease(createMemoryStore());
    expect(kindOf(r.second)).toEqual(["stop", "uncertain_mutation"]);
    expect(r.afterB).toBe("uncertain");
    expect(kindOf(r.firstOutcome)).toEqual(["stop", "protocol_error"]);
    expect(r.afterA).toBe("uncertain");
    expect(kindOf(r.third)).toEqual(["stop", "uncertain_mutation"]);
    expect(r.sent).toEqual(["A", "B"]);
  });
});

describe("a failed attempt whose judging throws before it is classified", () => {
  it("a host's toFailure that returns no text: the key is settled, never left pending (was: pending, TypeError)", async () => {
    const store = createMemoryStore();
    const g = createGovernor({ tools: { pay: { effect: "mutating" } } }, { metrics: false, store });
    let key: string | undefined;
    const thrown = await g
      .startRun({ idempotencyScope: "s" })
      .call(
        { tool: "pay", args: { a: 1 }, callId: "x", toFailure: () => ({}) as Failure },
        async (ctx) => {
          key = ctx.idempotencyKey;
          throw lost();
        },
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    // The host's bug surfaces as its own throw; the write it was judging is in doubt.
    expect(thrown).toBeInstanceOf(TypeError);
    expect((await store.entry(key as string))?.state).toBe("uncertain");
    // The same logical call is refused, not sent again.
    let again = 0;
    const retry = await g
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "pay", args: { a: 1 }, callId: "x" }, async () => {
        again += 1;
        return ok("paid");
      });
    expect(kindOf(retry)).toEqual(["stop", "uncertain_mutation"]);
    expect(again).toBe(0);
  });
});
