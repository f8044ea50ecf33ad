import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import { doubtKeyOf } from "./doubt.ts";
import { createGovernor, type GovernorOptions } from "./governor.ts";
import type { AttemptContext, CallOutcome } from "./types.ts";

/**
 * A write in doubt is never sent twice, whoever resends it (issue 26, docs/idempotency.md "A write
 * in doubt"): an identical write (same server, tool, canonical arguments and scope) is refused
 * while it is in doubt, whatever its tool-call id, until an answer about its key or a person
 * settles it.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
/** The connection dropped mid-call: the write may have happened. */
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
/** A tool's own text the model is asked to act on; a tool that answered has run (unknown). */
const fixable = {
  content: [{ type: "text", text: "Invalid memo: expected at most 20 chars" }],
  isError: true,
};
const gov = (options: GovernorOptions = {}, honorsKeys = false) =>
  createGovernor(
    {
      tools: {
        charge: { effect: "mutating", idempotency: { honorsKeys }, retry: { attempts: 1 } },
      },
    },
    { metrics: false, random: () => 0, ...options },
  );
/** Waits (real time, a few ms at a time) until `done()` holds. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(done()).toBe(true);
}
const keyOf = (o: CallOutcome<unknown>) => (o.kind === "stop" ? o.idempotencyKey : undefined);

describe("doubtKeyOf", () => {
  it("gives each content hash its own key, whatever was asked before (the last one is kept)", () => {
    const a = "0123456789abcdef0123456789abcdef";
    const b = "fedcba9876543210fedcba9876543210";
    expect(doubtKeyOf(a)).toBe(`gd_${a}`);
    expect(doubtKeyOf(a)).toBe(`gd_${a}`);
    expect(doubtKeyOf(b)).toBe(`gd_${b}`);
    expect(doubtKeyOf(a)).toBe(`gd_${a}`);
  });
});

describe("issue 26.1: the same write under a new tool-call id", () => {
  it("is refused in the run while the first is in doubt (was: sent under a new key)", async () => {
    const governor = gov();
    const run = governor.startRun();
    const sent: (string | undefined)[] = [];
    const charge = async (ctx: AttemptContext) => {
      sent.push(ctx.idempotencyKey);
      return fixable;
    };
    const first = await run.call({ tool: "charge", args: { amount: 5 }, callId: "call_1" }, charge);
    expect(first).toMatchObject({ kind: "model" });
    // The model sends the same charge again: a new tool-call id, so a new key.
    const again = await run.call({ tool: "charge", args: { amount: 5 }, callId: "call_2" }, charge);
    expect(sent).toHaveLength(1);
    expect(again).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      personResolvable: true,
    });
    // Its own key was never sent: it names none.
    expect(keyOf(again)).toBeUndefined();
    // Other arguments are another write.
    const other = governor.startRun();
    await other.call({ tool: "charge", args: { amount: 6 }, callId: "call_3" }, charge);
    expect(sent).toHaveLength(2);
  });

  it("in a scope, other runs are refused until a person settles the key; then it is sent", async () => {
    const store = createMemoryStore();
    const governor = gov({ store });
    const sent: (string | undefined)[] = [];
    const lost = async (ctx: AttemptContext) => {
      sent.push(ctx.idempotencyKey);
      throw reset();
    };
    const paid = async (ctx: AttemptContext) => {
      sent.push(ctx.idempotencyKey);
      return ok("paid");
    };
    const call = (callId: string) => ({ tool: "charge", args: { amount: 5 }, callId });
    const first = await governor.startRun({ idempotencyScope: "job-1" }).call(call("a"), lost);
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = keyOf(first) as string;
    expect(key).toMatch(/^gk_/);
    for (const callId of ["b", "c"]) {
      const again = await governor.startRun({ idempotencyScope: "job-1" }).call(call(callId), paid);
      expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    }
    // Another scope is another job: not refused.
    expect(
      await governor.startRun({ idempotencyScope: "job-2" }).call(call("a"), paid),
    ).toMatchObject({
      kind: "ok",
    });
    expect(sent).toHaveLength(2);
    // A person checked: the charge did not happen.
    await governor.settle(key, "failed");
    expect(
      await governor.startRun({ idempotencyScope: "job-1" }).call(call("d"), paid),
    ).toMatchObject({
      kind: "ok",
    });
    expect(sent).toHaveLength(3);
    // After a success, the same charge again is a new write: sent.
    expect(
      await governor.startRun({ idempotencyScope: "job-1" }).call(call("e"), paid),
    ).toMatchObject({
      kind: "ok",
      replayed: false,
    });
    expect(sent).toHaveLength(4);
  });

  it("two identical writes at once: the second is refused as in progress, never sent", async () => {
    const governor = gov();
    const run = governor.startRun();
    let sent = 0;
    let answer = () => {};
    const slow = async () => {
      sent += 1;
      await new Promise<void>((resolve) => {
        answer = resolve;
      });
      return ok("paid");
    };
    const first = run.call({ tool: "charge", args: { amount: 5 }, callId: "x" }, slow);
    const second = await run.call({ tool: "charge", args: { amount: 5 }, callId: "y" }, slow);
    expect(second).toMatchObject({ kind: "model", reason: "conflict" });
    answer();
    expect(await first).toMatchObject({ kind: "ok" });
    expect(sent).toBe(1);
  });

  it("while a failed write is judged (its verify step looking), an identical write is refused as in progress; once the verify step found nothing, it is sent", async () => {
    const store = createMemoryStore();
    let looked = () => {};
    let verifies = 0;
    const governor = createGovernor(
      {
        tools: {
          charge: { effect: "mutating", idempotency: { verify: true }, retry: { attempts: 1 } },
        },
      },
      {
        metrics: false,
        random: () => 0,
        store,
        verify: {
          charge: async () => {
            verifies += 1;
            await new Promise<void>((resolve) => {
              looked = resolve;
            });
            return { effect: "absent" };
          },
        },
      },
    );
    const run = governor.startRun({ idempotencyScope: "job" });
    const sent: string[] = [];
    const first = run.call({ tool: "charge", args: { amount: 5 }, callId: "x" }, async () => {
      sent.push("x");
      throw reset();
    });
    await until(() => verifies === 1);
    // The first write's key and content entry are settled once, after its verify step: until
    // then it is in flight, and an identical write is not sent.
    const during = await run.call(
      { tool: "charge", args: { amount: 5 }, callId: "y" },
      async () => {
        sent.push("y");
        return ok("paid");
      },
    );
    expect(during).toMatchObject({ kind: "model", reason: "conflict" });
    looked();
    // No effect found and no retry left: the call stops (its run with it), its entries freed, so
    // the same write in the scope's next run is sent.
    expect(await first).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    const next = governor.startRun({ idempotencyScope: "job" });
    const after = await next.call(
      { tool: "charge", args: { amount: 5 }, callId: "z" },
      async () => {
        sent.push("z");
        return ok("paid");
      },
    );
    expect(after).toMatchObject({ kind: "ok", replayed: false });
    expect(sent).toEqual(["x", "z"]);
  });

  it("a retry of the same logical call with its key is not refused by its own entry", async () => {
    const sent: (string | undefined)[] = [];
    const outcome = await createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { honorsKeys: true },
            retry: { attempts: 3, baseDelayMs: 0 },
          },
        },
      },
      { metrics: false, random: () => 0 },
    )
      .startRun()
      .call({ tool: "charge", args: { amount: 5 }, callId: "c" }, async (ctx) => {
        sent.push(ctx.idempotencyKey);
        if (sent.length === 1) throw reset();
        return ok("paid");
      });
    expect(outcome).toMatchObject({ kind: "ok" });
    expect(sent).toHaveLength(2);
    expect(sent[0]).toBe(sent[1]);
  });
});

describe("issue 26.2: an answer that a request with this key is still in progress", () => {
  const inProgress = {
    content: [
      {
        type: "text",
        text: "409 Conflict: another request with idempotency key gk_1 is still being processed. Retry in a few seconds.",
      },
    ],
    isError: true,
  };
  const keyedGov = (options: GovernorOptions = {}, extra: Record<string, unknown> = {}) =>
    createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { honorsKeys: true, ...extra },
            retry: { attempts: 4, baseDelayMs: 1, maxDelayMs: 5 },
          },
        },
      },
      { metrics: false, random: () => 0, ...options },
    );

  it("a tool that honours keys waits and retries with the same key (was: correct_arguments, then charged twice)", async () => {
    const delays: number[] = [];
    const governor = keyedGov({ onRetry: (r) => void delays.push(r.delayMs) });
    const run = governor.startRun();
    const sent: (string | undefined)[] = [];
    let charges = 0;
    const outcome = await run.call(
      { tool: "charge", args: { amount: 5 }, callId: "call_1" },
      async (ctx) => {
        sent.push(ctx.idempotencyKey);
        if (sent.length === 1) {
          charges += 1; // the first attempt charged, its answer was lost
          throw reset();
        }
        if (sent.length === 2) {
          return {
            ...inProgress,
            structuredContent: { retryAfterMs: 40 },
          };
        }
        return ok("charged");
      },
    );
    expect(outcome).toMatchObject({ kind: "ok" });
    expect(sent).toHaveLength(3);
    expect(new Set(sent).size).toBe(1);
    expect(charges).toBe(1);
    // The server's Retry-After is honoured.
    expect(delays[1]).toBeGreaterThanOrEqual(40);
  });

  it("retries run out: a stop uncertain_mutation naming the key, never a correction", async () => {
    const governor = keyedGov();
    const run = governor.startRun();
    let key: string | undefined;
    const outcome = await run.call(
      { tool: "charge", args: { amount: 5 }, callId: "a" },
      async (ctx) => {
        key = ctx.idempotencyKey;
        return inProgress;
      },
    );
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      idempotencyKey: key,
    });
    let sent = 0;
    const again = await governor
      .startRun()
      .call({ tool: "charge", args: { amount: 5 }, callId: "b" }, async () => {
        sent += 1;
        return ok("charged");
      });
    // Another run instance without a scope is another write's (the scope is the host's to give).
    expect(again).toMatchObject({ kind: "ok" });
    expect(sent).toBe(1);
  });

  it("a tool that does not honour keys stops at once, naming the key", async () => {
    const governor = gov();
    let sent = 0;
    let key: string | undefined;
    const outcome = await governor
      .startRun()
      .call({ tool: "charge", args: { amount: 5 } }, async (ctx) => {
        sent += 1;
        key = ctx.idempotencyKey;
        return {
          content: [{ type: "text", text: "request failed" }],
          structuredContent: {
            error: { type: "idempotency_error", code: "idempotency_key_in_use" },
          },
          isError: true,
        };
      });
    expect(sent).toBe(1);
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      idempotencyKey: key,
    });
  });

  it("the policy names a server's own phrasing", async () => {
    const governor = keyedGov({}, { inProgress: ["job \\w+ has not finished"] });
    const sent: (string | undefined)[] = [];
    const outcome = await governor
      .startRun()
      .call({ tool: "charge", args: { amount: 5 } }, async (ctx) => {
        sent.push(ctx.idempotencyKey);
        if (sent.length === 1) {
          return { content: [{ type: "text", text: "job j_42 has not finished" }], isError: true };
        }
        return ok("charged");
      });
    expect(outcome).toMatchObject({ kind: "ok" });
    expect(sent).toHaveLength(2);
    expect(sent[0]).toBe(sent[1]);
  });
});

describe("governor.settle and the index of writes in doubt", () => {
  it("settling a key that was settled already frees nothing: a later identical write in doubt keeps refusing", async () => {
    const governor = gov();
    const lost = async () => {
      throw reset();
    };
    let sent = 0;
    const paid = async () => {
      sent += 1;
      return ok("paid");
    };
    const call = (callId: string) => ({ tool: "charge", args: { amount: 5 }, callId });
    const scope = { idempotencyScope: "job" };
    const a = await governor.startRun(scope).call(call("a"), lost);
    const keyA = keyOf(a) as string;
    await governor.settle(keyA, "failed");
    const b = await governor.startRun(scope).call(call("b"), lost);
    expect(keyOf(b)).toMatch(/^gk_/);
    // A person settles the first key again (a stale check): the second write stays in doubt.
    await governor.settle(keyA, "failed");
    expect(await governor.startRun(scope).call(call("c"), paid)).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
    });
    expect(sent).toBe(0);
  });
});
