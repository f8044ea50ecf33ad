// Attacks on a failed attempt's one settle (docs/idempotency.md, "A write in doubt"), on every
// real store: while the attempt is judged (the host's hook, the verify step) its key and content
// entry stay claimed, other runs of the scope are told "still in progress", and the one settle
// after it records what the judging found; a holder that judged past its lease does not free a
// key another worker took over since.

import { randomUUID } from "node:crypto";
import { createGovernor, createMemoryStore, type Store } from "@governor/core";
import { createRedisStore } from "@governor/redis";
import { describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { everyStore } from "./every-store.ts";

const redis = await sharedRedis("a failed attempt's settle on Redis");
const lost = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const kindOf = (o: { kind: string; reason?: string }) => [o.kind, o.reason];
const protocolError = () => Object.assign(new Error("Invalid Request"), { code: -32600 });

/** A promise and the function that resolves it. */
function gate<T = void>() {
  let open = (_: T): void => undefined;
  const shut = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { shut, open };
}

const { stores, redises } = everyStore(redis, "governor-judging-");

describe.each(stores)("a failed attempt's one settle on the %s store", (name, ready, make) => {
  // Redis runs leases on its server's clock (scripts.ts CLAIM), which no test clock moves: a lease
  // past the 15 min cap would take that long there.
  it.runIf(ready && name !== "Redis")(
    "judged past its lease, it does not free the key another worker took over and left in doubt (was: settled failed, the identical write sent)",
    async () => {
      const store = make();
      let t = Date.now();
      const now = () => t;
      const policy = {
        // A run longer than the lease's 15 min cap.
        budgets: { wallTimeMs: 3_600_000 },
        tools: {
          pay: {
            effect: "mutating" as const,
            idempotency: { honorsKeys: true },
            retry: { attempts: 1 },
          },
        },
      };
      const hook = gate();
      let hooked = 0;
      // Worker A: the server refuses its attempt with a protocol error (no effect), and its
      // host's hook takes 16 minutes to answer.
      const a = createGovernor(policy, {
        metrics: false,
        store,
        now,
        onHostError: async () => {
          hooked += 1;
          await hook.shut;
          return undefined;
        },
      });
      const b = createGovernor(policy, { metrics: false, store, now });
      const call = { tool: "pay", args: { amount: 5 }, callId: "c1" };
      const sent: string[] = [];
      let key: string | undefined;
      const first = a.startRun({ idempotencyScope: "job" }).call(call, async (ctx) => {
        sent.push("A");
        key = ctx.idempotencyKey;
        throw protocolError();
      });
      await expect.poll(() => hooked).toBe(1);
      expect((await store.entry(key as string))?.state).toBe("pending");
      t += 16 * 60_000;
      // Worker B (the job redelivered): A's lease ran out and the tool honours keys, so B takes
      // the key over and sends; its answer is lost, its write in doubt.
      const second = await b.startRun({ idempotencyScope: "job" }).call(call, async () => {
        sent.push("B");
        throw lost();
      });
      expect(kindOf(second)).toEqual(["stop", "uncertain_mutation"]);
      expect((await store.entry(key as string))?.state).toBe("uncertain");
      hook.open();
      expect(kindOf(await first)).toEqual(["stop", "protocol_error"]);
      // A's late settle leaves B's write in doubt.
      expect((await store.entry(key as string))?.state).toBe("uncertain");
      // The same charge again under a new tool-call id is refused, not sent.
      const third = await b
        .startRun({ idempotencyScope: "job" })
        .call({ ...call, callId: "c2" }, async () => {
          sent.push("C");
          return ok("paid");
        });
      expect(kindOf(third)).toEqual(["stop", "uncertain_mutation"]);
      expect(sent).toEqual(["A", "B"]);
    },
  );

  it.runIf(ready)(
    "while a lost answer is verified, other runs of the scope are told it is in progress; after, it is in doubt",
    async () => {
      const store = make();
      const verify = gate<{ effect: "unknown" }>();
      let verifying = 0;
      const policy = {
        tools: { pay: { effect: "mutating" as const, idempotency: { verify: true } } },
      };
      const g = createGovernor(policy, {
        metrics: false,
        store,
        verify: {
          pay: async () => {
            verifying += 1;
            return verify.shut;
          },
        },
      });
      const other = createGovernor(policy, { metrics: false, store });
      const call = { tool: "pay", args: { amount: 7 }, callId: "c1" };
      let sent = 0;
      let key: string | undefined;
      const first = g.startRun({ idempotencyScope: "s" }).call(call, async (ctx) => {
        sent += 1;
        key = ctx.idempotencyKey;
        throw lost();
      });
      await expect.poll(() => verifying).toBe(1);
      expect((await store.entry(key as string))?.state).toBe("pending");
      const send = async () => {
        sent += 1;
        return ok("paid");
      };
      // The same logical call, and the same write under another tool-call id, in other runs.
      for (const callId of ["c1", "c2"]) {
        const meanwhile = await other
          .startRun({ idempotencyScope: "s" })
          .call({ ...call, callId }, send);
        expect(meanwhile.kind).toBe("model");
        expect(JSON.stringify(meanwhile)).toMatch(/still in progress/);
      }
      verify.open({ effect: "unknown" });
      expect(kindOf(await first)).toEqual(["stop", "uncertain_mutation"]);
      expect((await store.entry(key as string))?.state).toBe("uncertain");
      for (const callId of ["c1", "c2"]) {
        const after = await other
          .startRun({ idempotencyScope: "s" })
          .call({ ...call, callId }, send);
        expect(kindOf(after)).toEqual(["stop", "uncertain_mutation"]);
      }
      expect(sent).toBe(1);
    },
  );

  it.runIf(ready)(
    "while the host's hook weighs a refusal, other runs are told it is in progress; after, the key is free and the call is sent",
    async () => {
      const store = make();
      const hook = gate();
      let hooked = 0;
      const policy = { tools: { pay: { effect: "mutating" as const } } };
      const g = createGovernor(policy, {
        metrics: false,
        store,
        onHostError: async () => {
          hooked += 1;
          await hook.shut;
          return undefined;
        },
      });
      const other = createGovernor(policy, { metrics: false, store });
      const call = { tool: "pay", args: { amount: 9 }, callId: "c1" };
      let sent = 0;
      let key: string | undefined;
      const first = g.startRun({ idempotencyScope: "s" }).call(call, async (ctx) => {
        sent += 1;
        key = ctx.idempotencyKey;
        throw protocolError();
      });
      await expect.poll(() => hooked).toBe(1);
      const send = async () => {
        sent += 1;
        return ok("paid");
      };
      const meanwhile = await other.startRun({ idempotencyScope: "s" }).call(call, send);
      expect(JSON.stringify(meanwhile)).toMatch(/still in progress/);
      expect(sent).toBe(1);
      hook.open();
      expect(kindOf(await first)).toEqual(["stop", "protocol_error"]);
      expect((await store.entry(key as string))?.state).toBe("failed");
      const after = await other.startRun({ idempotencyScope: "s" }).call(call, send);
      expect(after.kind).toBe("ok");
      expect(sent).toBe(2);
    },
  );
});

describe.each(stores)("a judging cut on the %s store", (_name, ready, make) => {
  // The run's end, an abort of the run or of the call, or the deadline, while the verify step (a
  // lost answer) or the host's hook (a refusal) hangs: the key is settled once, as what the
  // attempt came to, before run.call returns; the same logical call is then refused, or sent.
  describe.each(["run.end()", "the run's abort", "the call's abort", "the deadline"] as const)(
    "%s",
    (ending) => {
      it.runIf(ready).each(["lost", "refused"] as const)(
        "an attempt %s: never left pending",
        async (failure) => {
          const store = make();
          let judging = 0;
          const hang = () => {
            judging += 1;
            return new Promise<never>(() => {});
          };
          const g = createGovernor(
            {
              budgets: { wallTimeMs: ending === "the deadline" ? 300 : 60_000 },
              tools: { pay: { effect: "mutating", idempotency: { verify: true } } },
            },
            { metrics: false, store, verify: { pay: hang }, onHostError: hang },
          );
          const runAbort = new AbortController();
          const callAbort = new AbortController();
          const run = g.startRun({ idempotencyScope: "s", signal: runAbort.signal });
          let key: string | undefined;
          const call = { tool: "pay", args: { a: 1 }, callId: "c" };
          const first = run
            .call({ ...call, signal: callAbort.signal }, async (ctx) => {
              key = ctx.idempotencyKey;
              throw failure === "lost" ? lost() : protocolError();
            })
            .then(
              () => "returned",
              () => "threw",
            );
          await expect.poll(() => judging).toBe(1);
          if (ending === "run.end()") run.end();
          if (ending === "the run's abort") runAbort.abort();
          if (ending === "the call's abort") callAbort.abort();
          expect(await first).toBe("returned");
          expect((await store.entry(key as string))?.state).toBe(
            failure === "lost" ? "uncertain" : "failed",
          );
          let sent = 0;
          const again = await g.startRun({ idempotencyScope: "s" }).call(call, async () => {
            sent += 1;
            return ok("paid");
          });
          if (failure === "lost") {
            expect(kindOf(again)).toEqual(["stop", "uncertain_mutation"]);
            expect(sent).toBe(0);
          } else {
            expect(again.kind).toBe("ok");
            expect(sent).toBe(1);
          }
        },
      );
    },
  );
});

describe.each(stores)("a retry cut in flight on the %s store", (_name, ready, make) => {
  // The first attempt is refused (503: no effect), the retry is sent and hangs, then the call is
  // cut. p-retry runs no callback once its signal aborted, so the retry's failure was never
  // judged and its key was left pending until its lease ran out (was: pending after run.call
  // returned; the stop named no key).
  describe.each(["the call's abort", "the run's abort", "run.end()"] as const)("%s", (ending) => {
    it.runIf(ready)("settles the retry's key in doubt before run.call returns", async () => {
      const store = make();
      const g = createGovernor(
        {
          tools: {
            pay: {
              effect: "mutating",
              retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
            },
          },
        },
        { metrics: false, store },
      );
      const callAbort = new AbortController();
      const runAbort = new AbortController();
      const run = g.startRun({ idempotencyScope: "s", signal: runAbort.signal });
      const call = { tool: "pay", args: { a: 1 }, callId: "c" };
      let key: string | undefined;
      let sent = 0;
      const first = run.call({ ...call, signal: callAbort.signal }, async (ctx) => {
        key = ctx.idempotencyKey;
        sent += 1;
        if (sent === 1) throw Object.assign(new Error("503 Service Unavailable"), { status: 503 });
        return new Promise(() => {});
      });
      await expect.poll(() => sent).toBe(2);
      if (ending === "the call's abort") callAbort.abort();
      if (ending === "the run's abort") runAbort.abort();
      if (ending === "run.end()") run.end();
      const outcome = await first;
      expect((await store.entry(key as string))?.state).toBe("uncertain");
      expect(outcome).toMatchObject({ kind: "stop", idempotencyKey: key });
      const again = await g.startRun({ idempotencyScope: "s" }).call(call, async () => {
        sent += 1;
        return ok("paid");
      });
      expect(kindOf(again)).toEqual(["stop", "uncertain_mutation"]);
      expect(sent).toBe(2);
    });
  });
});

/**
 * A mutating `pay` of `amount` whose tool, once started, waits until a person settled its key
 * `succeeded` (`governor.settle`, taken while the call is in flight), then ends as `ending` says.
 * Returns the call's outcome, the key, and how many times the tool ran so far (`sent`).
 */
async function settledDuringCall(
  make: () => Store,
  amount: number,
  ending: () => Promise<unknown>,
) {
  const store = make();
  const governor = createGovernor(
    { tools: { pay: { effect: "mutating" } } },
    { metrics: false, store },
  );
  const call = { tool: "pay", args: { amount }, callId: "c1" };
  const answer = gate();
  let key: string | undefined;
  let sent = 0;
  const first = governor.startRun({ idempotencyScope: "job" }).call(call, async (ctx) => {
    sent += 1;
    key = ctx.idempotencyKey;
    await answer.shut;
    return ending();
  });
  await expect.poll(() => key).toBeDefined();
  await governor.settle(key as string, "succeeded");
  answer.open();
  const outcome = await first;
  // A later call in the same scope; its tool counts into `sent`.
  const callAgain = (callId: string, text: string) =>
    governor.startRun({ idempotencyScope: "job" }).call({ ...call, callId }, async () => {
      sent += 1;
      return ok(text);
    });
  return { store, key: key as string, outcome, callAgain, sent: () => sent };
}

describe.each(stores)("a person's settle during the call on the %s store", (_name, ready, make) => {
  // `governor.settle(key, "succeeded")` is taken while the call is in flight (it sends nothing
  // again). The attempt's own settle, made later, must not undo it: the write is known done.
  it.runIf(ready)(
    "a key a person settled succeeded is not demoted by the attempt's later settle (was: uncertain, the same call refused instead of replayed)",
    async () => {
      // The tool answers with a failure: it ran, so its write may have happened.
      const { store, key, callAgain, sent } = await settledDuringCall(make, 5, async () => ({
        isError: true,
        content: [{ type: "text", text: "upstream reset" }],
      }));
      expect((await store.entry(key))?.state).toBe("succeeded");
      const again = await callAgain("c1", "paid");
      expect(again).toMatchObject({ kind: "ok", replayed: true });
      expect(sent()).toBe(1);
    },
  );

  // The person's settle also freed the write's content entry (the index of writes in doubt): the
  // attempt's later settle, mirrored there, must not mark it in doubt again, where nobody would
  // free it (the key it mirrors is done, so a person settling that key frees nothing more).
  it.runIf(ready)(
    "an identical write under a new tool-call id is sent after a person settled the key succeeded (was: refused for good, the content entry marked in doubt again)",
    async () => {
      const { store, key, outcome, callAgain, sent } = await settledDuringCall(make, 6, () => {
        throw lost();
      });
      expect(kindOf(outcome)).toEqual(["stop", "uncertain_mutation"]);
      expect((await store.entry(key))?.state).toBe("succeeded");
      // The person said the first payment is made: a second one asked under a new id is a new
      // write, sent once.
      const next = await callAgain("c2", "paid again");
      expect(next).toMatchObject({ kind: "ok", replayed: false });
      expect(sent()).toBe(2);
    },
  );
});

describe("a person settling a key whose holder asked for a lease longer than any run's", () => {
  // Every claim a run makes holds at most 15 min (its wall time, capped). A key claimed with a
  // longer lease (another client of the store, a store written by hand) would leave a person
  // unable to settle it `failed` for as long as that lease says: years, or for ever.
  it.each([
    ["a year", 365 * 24 * 3_600_000],
    ["Infinity", Number.POSITIVE_INFINITY],
  ])(
    "is refused only for the 15 min any run's claim holds (%s asked; was: refused for that long)",
    async (_what, leaseMs) => {
      const store = createMemoryStore();
      const governor = createGovernor({}, { metrics: false, store });
      const at = Date.now();
      await store.claim("gk_long", "h", { now: at - 60_000, allowUncertain: false, leaseMs });
      // A minute in: the call may still be in flight, so the settle is refused, with what is left.
      const refused = await governor.settle("gk_long", "failed").then(
        () => undefined,
        (error: unknown) => String(error),
      );
      expect(refused).toMatch(/still in flight .*its lease runs \d+ ms more/);
      const left = Number(/runs (\d+) ms more/.exec(refused as string)?.[1]);
      expect(left).toBeLessThanOrEqual(14 * 60_000);
      // Past 15 min, it is settled.
      await store.claim("gk_older", "h", {
        now: at - 16 * 60_000,
        allowUncertain: false,
        leaseMs,
      });
      await governor.settle("gk_older", "failed");
      expect((await store.entry("gk_older"))?.state).toBe("failed");
    },
  );
});

describe.runIf(redis.problem === undefined)(
  "settling by hand a key claimed by a worker whose clock is behind (Redis; was: settled failed)",
  () => {
    // Redis runs leases on its server's clock (scripts.ts CLAIM: `leaseFrom`), so a worker whose
    // clock is minutes behind takes over nothing still in flight. governor.settle does not: it
    // counts the lease from the entry's `updatedAt` (the claimer's clock) with the person's clock,
    // so a key the store itself holds in flight is settled `failed`, and the same logical call is
    // claimed afresh and sent while the first may still commit. The fix belongs in the store's
    // `entry()` (the lease left by the store's own clock, e.g. a `leaseLeftMs` beside `leaseMs`,
    // read by run/governor.ts settle), not made here for want of time.
    it("refuses 'failed' while the store holds the key in flight, whatever the claimer's clock", async () => {
      const store = createRedisStore({
        url: redis.url as string,
        prefix: `governor-test:${randomUUID()}:`,
        requirePersistence: false,
      });
      redises.push(store);
      const governor = createGovernor({}, { metrics: false, store });
      // A worker whose clock is 10 min behind claims with a 5 min lease, just now.
      await store.claim("gk_skewed", "h", {
        now: Date.now() - 10 * 60_000,
        allowUncertain: false,
        leaseMs: 5 * 60_000,
      });
      // The store holds it in flight for another worker with a true clock.
      const other = await store.claim("gk_skewed", "h", {
        now: Date.now(),
        allowUncertain: true,
        leaseMs: 5 * 60_000,
      });
      expect(other.status).toBe("in_flight");
      const refused = await governor.settle("gk_skewed", "failed").then(
        () => undefined,
        (error: unknown) => String(error),
      );
      expect(refused).toMatch(/still in flight/);
    });
  },
);
