// Attacks on the ledger's promise, "a write never happens twice, or silently not at all", at the
// end of a held write's life: the settle that lets go of its entry in the index of writes in doubt
// (freed, or its answer kept there), on every store (memory, SQLite, Redis).

import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { createGovernor, type Governor, type Store, StoreError } from "@governor/core";
import { createSqliteStore } from "@governor/sqlite";
import { describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";
import { everyStore } from "./every-store.ts";
import { givenUp, ok, onSettle, type Settle, scoped, writeTool } from "./support/ledger-calls.ts";

const redis = await sharedRedis("ledger promise attacks on Redis");

const { stores, dir, sqlites } = everyStore(redis, "governor-ledger-promise-");

const policy = { tools: { create: { effect: "mutating" as const } } };

/** The settle that ends a held write's claim of its content entry (`gd_`, naming the claim). */
const heldSettle = ([key, _state, options]: Settle) =>
  key.startsWith("gd_") && options.claimedAt !== undefined;

/** Resolves once `done()` holds (polled every 5 ms), or after `ms`. */
async function until(done: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done()) && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const unavailable = () =>
  new StoreError({
    reason: "unavailable",
    operation: "settle",
    message: "TestStore: settle failed: the connection to the store is down.",
  });

describe.each(stores)("the last settle of a held write, on the %s store", (_n, ready, make) => {
  it.runIf(ready)(
    "a keep that fails once (the store unavailable) is made again: the identical call gets the answer, the write is made once",
    async () => {
      let failures = 0;
      const store = onSettle(make(), async (target, ...args) => {
        const [, state] = args;
        if (failures === 0 && heldSettle(args) && state === "succeeded") {
          failures += 1;
          throw unavailable();
        }
        return target.settle(...args);
      });
      const governor = createGovernor(policy, { metrics: false, store });
      const call = { tool: "create", args: { title: "keep once more" } };
      const writes = writeTool();
      const first = await scoped(governor).call(givenUp(call), writes.send);
      expect(first).toMatchObject({ kind: "ok", value: ok("created 1"), kept: true });
      expect(failures).toBe(1);
      // The answer the host gave up on reaches the identical call it sends next.
      const again = await scoped(governor).call(call, writes.send);
      expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
      expect(writes.sent).toBe(1);
    },
  );

  it.runIf(ready)(
    "a free that fails once (the store unavailable) is made again: the identical call after the answer is a new write, not refused",
    async () => {
      let failures = 0;
      const store = onSettle(make(), async (target, ...args) => {
        const [, state] = args;
        if (failures === 0 && heldSettle(args) && state === "failed") {
          failures += 1;
          throw unavailable();
        }
        return target.settle(...args);
      });
      const errors: unknown[] = [];
      const governor = createGovernor(policy, {
        metrics: false,
        store,
        onHostError: (error) => {
          errors.push(error);
        },
      });
      const call = { tool: "create", args: { title: "free once more" } };
      const writes = writeTool();
      const live = new AbortController();
      const first = await scoped(governor).call({ ...call, signal: live.signal }, writes.send);
      expect(first).toEqual({ kind: "ok", value: ok("created 1"), attempts: 1, replayed: false });
      expect(failures).toBe(1);
      expect(errors).toEqual([]);
      // The answer reached the model: the identical call after it is a new write.
      const next = await scoped(governor).call(call, writes.send);
      expect(next).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
      expect(writes.sent).toBe(2);
    },
  );

  it.runIf(ready)(
    "a keep that timed out is not made again (it may still land): here it landed, and the identical call gets the answer once",
    async () => {
      let keeps = 0;
      let answer: () => void = () => undefined;
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      const store = onSettle(make(), async (target, ...args) => {
        const [, state] = args;
        if (heldSettle(args) && state === "succeeded") {
          keeps += 1;
          // Written, and its answer held back past the store timeout.
          await target.settle(...args);
          await answered;
          return;
        }
        return target.settle(...args);
      });
      const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs: 1_000 });
      const call = { tool: "create", args: { title: "kept late" } };
      const writes = writeTool();
      const first = await scoped(governor).call(givenUp(call), writes.send);
      expect(first).toMatchObject({ kind: "ok", kept: true });
      // Past the store timeout of the keep: it is not asked again.
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      expect(keeps).toBe(1);
      answer();
      const again = await scoped(governor).call(call, writes.send);
      expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
      expect(writes.sent).toBe(1);
    },
  );
});

describe.each(stores)(
  "an answer kept by a run that can meet no identical call, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "a run without scope that ended as its write was given up on keeps nothing: the outcome does not say kept",
      async () => {
        const store = make();
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "nobody to give it to" } };
        const cancel = new AbortController();
        const run = governor.startRun();
        const first = await run.call(
          {
            ...call,
            signal: cancel.signal,
            beforeAnswer: async () => {
              cancel.abort();
              run.end();
            },
          },
          async () => ok("created"),
        );
        // No identical call can meet the answer (content entries without a scope are the run's own).
        expect(first).not.toMatchObject({ kept: true });
        // `keepAnswer` says the same of such a run.
        expect(await run.keepAnswer(call, ok("created"))).toBe(false);
      },
    );
  },
);

describe.each(stores)("the host's moment before the answer, on the %s store", (_n, ready, make) => {
  it.runIf(ready)(
    "a beforeAnswer that never settles is cut at the run's deadline: the call answers, and its write's entry is freed",
    async () => {
      const store = make();
      const governor = createGovernor(policy, { metrics: false, store });
      const call = { tool: "create", args: { title: "hung hook" } };
      const writes = writeTool();
      const run = governor.startRun({ idempotencyScope: "s", deadline: Date.now() + 1_000 });
      const outcome = run.call(
        { ...call, beforeAnswer: () => new Promise<void>(() => {}) },
        writes.send,
      );
      const hung = Symbol("hung");
      const first = await Promise.race([
        outcome,
        new Promise((resolve) => setTimeout(() => resolve(hung), 5_000)),
      ]);
      expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
      await new Promise((resolve) => setTimeout(resolve, 100));
      // The answer went to the model: the identical call after it is a new write.
      const next = await scoped(governor).call(call, writes.send);
      expect(next).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
    },
  );
});

describe.each(stores)(
  "a call given up on while its write's entry is freed, and another process, on the %s store",
  (_n, ready, make) => {
    // The free is on its way when the host gives up, so the answer is kept right after it lands.
    // The free holds the entry for the call (`SettleOptions.holdMs`) until then: an identical call
    // of another process in that moment is refused as in progress, not sent, and the one after the
    // keep gets the answer.
    it.runIf(ready)(
      "the identical call of another process sent in that moment is refused as in progress; the next one gets the answer kept after the free, not a second write",
      async () => {
        const real = make();
        const cancel = new AbortController();
        let other: Promise<unknown> | undefined;
        let heldKey: string | undefined;
        // The other process: its own governor on its own handle of the store.
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const call = { tool: "create", args: { title: "freed elsewhere" } };
        const writes = writeTool();
        // The free lands at once; its answer comes once the other process, in that moment, sent
        // the identical call (the host gave up first).
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (other === undefined && heldSettle(args) && args[1] === "failed") {
            heldKey = args[0];
            cancel.abort();
            other = scoped(elsewhere).call(call, writes.send);
            await other;
          }
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const first = await scoped(governor).call({ ...call, signal: cancel.signal }, writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        expect(await other).toMatchObject({ kind: "model", reason: "conflict" });
        expect(writes.sent).toBe(1);
        // The keep goes on past the call's cut: once it landed, the answer is there.
        await until(async () => (await real.entry(heldKey as string))?.state === "succeeded");
        expect((await real.entry(heldKey as string))?.state).toBe("succeeded");
        const again = await scoped(elsewhere).call(call, writes.send);
        expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
        expect(writes.sent).toBe(1);
      },
    );
  },
);

describe.each(stores)(
  "the hold on a write's entry freed while its host could still give up, on the %s store",
  (_n, ready, make) => {
    /**
     * A governor whose store's settles answer later (as a remote store's do) and whose process
     * dies as the free of a held write's entry lands (`crash`: its answer never comes), with the
     * store timeout that sets the hold (twice it).
     */
    function dyingProcess(real: Store, storeTimeoutMs: number) {
      let freedKey: string | undefined;
      const store = onSettle(real, async (target, ...args) => {
        await target.settle(...args);
        if (freedKey === undefined && heldSettle(args) && args[1] === "failed") {
          freedKey = args[0];
          // The process is gone: nothing after the free is ever written.
          await new Promise<void>(() => {});
        }
      });
      const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs });
      return { governor, freed: () => freedKey };
    }

    it.runIf(ready)(
      "a process that dies as the free lands leaves the entry held until the hold runs out: another process's identical call is refused meanwhile, then is a new write",
      async () => {
        const real = make();
        // Connected (and checked) first: the timeouts below are for commands, not for a connect.
        await real.get("warm");
        const storeTimeoutMs = 200;
        const dying = dyingProcess(real, storeTimeoutMs);
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const call = { tool: "create", args: { title: "died as freed" } };
        const writes = writeTool();
        const live = new AbortController();
        // Cut by its store timeout: the free's answer never comes.
        void scoped(dying.governor)
          .call({ ...call, signal: live.signal }, writes.send)
          .catch(() => undefined);
        await until(() => dying.freed() !== undefined);
        const freedAt = Date.now();
        expect(writes.sent).toBe(1);
        // The answer may not have reached the host: the identical write is not sent while the
        // hold lasts (twice the dead process's store timeout).
        const meanwhile = await scoped(elsewhere).call(call, writes.send);
        expect(meanwhile).toMatchObject({ kind: "model", reason: "conflict" });
        expect(writes.sent).toBe(1);
        // Past the hold, nobody can keep an answer there any more: the identical call is a new
        // write, never refused for good.
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(0, freedAt + 2 * storeTimeoutMs + 100 - Date.now())),
        );
        const after = await scoped(elsewhere).call(call, writes.send);
        expect(after).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
        expect(writes.sent).toBe(2);
      },
    );

    it.runIf(ready)(
      "the hold is the holder's: a keep that comes after it ran out and another process claimed the entry is dropped, and leaves that write alone",
      async () => {
        const real = make();
        await real.get("warm");
        const storeTimeoutMs = 100;
        const cancel = new AbortController();
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const call = { tool: "create", args: { title: "kept too late" } };
        const writes = writeTool();
        let release: () => void = () => undefined;
        const out = new Promise<void>((resolve) => {
          release = resolve;
        });
        let second: Promise<unknown> | undefined;
        let heldKey: string | undefined;
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (second === undefined && heldSettle(args) && args[1] === "failed") {
            heldKey = args[0];
            cancel.abort();
            // The free's answer comes after its hold: another process's identical write claimed
            // the entry meanwhile, and is out.
            await new Promise((resolve) => setTimeout(resolve, 2 * storeTimeoutMs + 50));
            // Sent, and answered once released.
            second = scoped(elsewhere).call(call, async () => {
              const answer = writes.send();
              await out;
              return answer;
            });
            await until(() => writes.sent > 1);
          }
        });
        const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs });
        const first = await scoped(governor).call({ ...call, signal: cancel.signal }, writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        expect(first).not.toMatchObject({ kept: true });
        await until(() => writes.sent > 1);
        // The late keep has had its time: the entry is still the other write's claim.
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect((await real.entry(heldKey as string))?.state).toBe("pending");
        release();
        expect(await second).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
      },
    );
  },
);

describe.each(stores)(
  "the keep made under the hold when the store fails once, on the %s store",
  (_n, ready, make) => {
    /**
     * A governor whose free of a held write's entry lands, then the host gives up before its
     * answer comes (the keep is made under the hold), and whose store fails once on `failing`.
     */
    function givenUpAsFreed(real: Store, failing: "claim" | "settle") {
      const cancel = new AbortController();
      let freed = false;
      let failures = 0;
      let kept = false;
      const settled = onSettle(real, async (target, ...args) => {
        const [key, state, options] = args;
        const keep = key.startsWith("gd_") && state === "succeeded";
        if (keep && failing === "settle" && failures === 0) {
          failures += 1;
          throw unavailable();
        }
        await target.settle(...args);
        if (keep) kept = true;
        if (!freed && heldSettle(args) && state === "failed" && options.holdMs !== undefined) {
          freed = true;
          cancel.abort();
        }
      });
      const store = new Proxy(settled, {
        get(target, property) {
          const value = Reflect.get(target, property, target) as unknown;
          if (property !== "claim") return value;
          return async (...args: Parameters<Store["claim"]>) => {
            const [key, , options] = args;
            // The keep's claim, passing the call's own hold.
            if (failing === "claim" && failures === 0 && key.startsWith("gd_") && freed) {
              if (options.handedOver !== undefined) {
                failures += 1;
                throw unavailable();
              }
            }
            return target.claim(...args);
          };
        },
      });
      const governor = createGovernor(policy, { metrics: false, store });
      return { governor, cancel, failures: () => failures, kept: () => kept };
    }

    for (const failing of ["settle", "claim"] as const) {
      it.runIf(ready)(
        `a keep whose ${failing} fails once (the store unavailable) is made again: another process's identical call gets the answer, not a second write`,
        async () => {
          const real = make();
          const elsewhere = createGovernor(policy, { metrics: false, store: real });
          const call = { tool: "create", args: { title: `keep under the hold, ${failing}` } };
          let sent = 0;
          const send = async () => {
            sent += 1;
            return ok(`created ${sent}`);
          };
          const here = givenUpAsFreed(real, failing);
          const first = await here.governor
            .startRun({ idempotencyScope: "s" })
            .call({ ...call, signal: here.cancel.signal }, send);
          expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
          expect(here.cancel.signal.aborted).toBe(true);
          // The keep goes on past the call's cut.
          await until(() => here.kept(), 1_000);
          expect(here.failures()).toBe(1);
          const again = await elsewhere.startRun({ idempotencyScope: "s" }).call(call, send);
          expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
          expect(sent).toBe(1);
        },
      );
    }
  },
);

describe.each(stores)(
  "a free whose answer comes after the call was cut by the store timeout, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "the answer went out with the call's outcome: an abort of the call's signal after it keeps nothing, and the identical call after it is a new write",
      async () => {
        const real = make();
        await real.get("warm");
        const storeTimeoutMs = 150;
        const cancel = new AbortController();
        const call = { tool: "create", args: { title: "answered, then aborted" } };
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok(`created ${sent}`);
        };
        let heldKey: string | undefined;
        let answered = false;
        // The free lands at once; its answer comes after the call's store timeout cut the wait.
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (heldKey === undefined && heldSettle(args) && args[1] === "failed") {
            heldKey = args[0];
            await new Promise((resolve) => setTimeout(resolve, 2 * storeTimeoutMs));
            answered = true;
          }
        });
        const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs });
        const first = await governor
          .startRun({ idempotencyScope: "s" })
          .call({ ...call, signal: cancel.signal }, send);
        // The answer reached the host with the outcome; its signal aborts after (a request's
        // cleanup), before the free's answer came.
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        expect(first).not.toMatchObject({ kept: true });
        expect(answered).toBe(false);
        cancel.abort();
        await until(() => answered);
        // A keep, if one were made, has had its time.
        await new Promise((resolve) => setTimeout(resolve, 2 * storeTimeoutMs));
        expect((await real.entry(heldKey as string))?.state).toBe("failed");
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const next = await elsewhere.startRun({ idempotencyScope: "s" }).call(call, send);
        expect(next).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
        expect(sent).toBe(2);
      },
    );

    it.runIf(ready)(
      "the host that keeps the answer itself after the outcome, before the free's answer came, keeps it: its own hold does not refuse it",
      async () => {
        const real = make();
        await real.get("warm");
        const storeTimeoutMs = 150;
        const call = { tool: "create", args: { title: "answered, kept by the host" } };
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok(`created ${sent}`);
        };
        let answered = false;
        let freed = false;
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (!freed && heldSettle(args) && args[1] === "failed") {
            freed = true;
            await new Promise((resolve) => setTimeout(resolve, 2 * storeTimeoutMs));
            answered = true;
          }
        });
        const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs });
        const cancel = new AbortController();
        const run = governor.startRun({ idempotencyScope: "s" });
        const first = await run.call({ ...call, signal: cancel.signal }, send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        expect(answered).toBe(false);
        // The host gave up on it after all: it keeps the answer, as docs/idempotency.md shows.
        cancel.abort();
        expect(await run.keepAnswer(call, ok("created 1"))).toBe(true);
        await until(() => answered);
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const again = await elsewhere.startRun({ idempotencyScope: "s" }).call(call, send);
        expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
        expect(sent).toBe(1);
      },
    );
  },
);

describe.each(stores)(
  "a free that lands and whose answer never comes, and the next call of the same process, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "the hand-over ends with the store timeout: the identical call of the same process after the hold is a new write, not refused for good",
      async () => {
        const real = make();
        await real.get("warm");
        const storeTimeoutMs = 150;
        let freedAt: number | undefined;
        // A connection that lost the free's answer: it landed, and nothing ever answers it.
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (freedAt === undefined && heldSettle(args) && args[1] === "failed") {
            freedAt = Date.now();
            await new Promise<void>(() => {});
          }
        });
        const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs });
        const call = { tool: "create", args: { title: "free never answered" } };
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok(`created ${sent}`);
        };
        const live = new AbortController();
        const first = await governor
          .startRun({ idempotencyScope: "s" })
          .call({ ...call, signal: live.signal }, send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        // Past the hold: nobody can keep an answer there any more.
        await new Promise((resolve) =>
          setTimeout(
            resolve,
            Math.max(0, (freedAt as number) + 2 * storeTimeoutMs + 100 - Date.now()),
          ),
        );
        const next = await governor
          .startRun({ idempotencyScope: "s" })
          .call(call, send)
          .catch((error: unknown) => error);
        expect(next).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
        expect(sent).toBe(2);
      },
    );
  },
);

describe.each(stores)(
  "the hold after a success handed over, and governors of one process, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "governors on one store object share what their process knows: the identical call of another governor on it passes the hold; one on another handle (as another process) is refused until it runs out",
      async () => {
        const real = make();
        await real.get("warm");
        // Settles that answer later, as a remote store's do: the free is made under a hold.
        const shared = onSettle(real, (target, ...args) => Promise.resolve(target.settle(...args)));
        const other = onSettle(real, (target, ...args) => Promise.resolve(target.settle(...args)));
        const storeTimeoutMs = 150;
        const first = createGovernor(policy, { metrics: false, store: shared, storeTimeoutMs });
        const second = createGovernor(policy, { metrics: false, store: shared, storeTimeoutMs });
        const elsewhere = createGovernor(policy, { metrics: false, store: other, storeTimeoutMs });
        const call = { tool: "create", args: { title: "one process, two governors" } };
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok(`created ${sent}`);
        };
        const live = new AbortController();
        const a = await first
          .startRun({ idempotencyScope: "s" })
          .call({ ...call, signal: live.signal }, send);
        expect(a).toMatchObject({ kind: "ok", value: ok("created 1") });
        const refused = await elsewhere.startRun({ idempotencyScope: "s" }).call(call, send);
        expect(refused).toMatchObject({ kind: "model", reason: "conflict" });
        // Another scope of the same process is another entry: nothing holds it.
        const otherScope = await second.startRun({ idempotencyScope: "t" }).call(call, send);
        expect(otherScope).toMatchObject({ kind: "ok", value: ok("created 2") });
        const b = await second.startRun({ idempotencyScope: "s" }).call(call, send);
        expect(b).toMatchObject({ kind: "ok", value: ok("created 3"), replayed: false });
        expect(sent).toBe(3);
      },
    );
  },
);
describe("a store whose settles answer at once, two processes on one SQLite file", () => {
  // No abort can come between such a free and its answer: the free holds nothing, and another
  // process's identical write right after the success is a new write, not refused.
  it.runIf(sqliteModule() !== undefined)(
    "the free of a call with its own signal holds nothing: the other process's identical call after it is a new write",
    async () => {
      const path = join(dir, `${randomUUID()}.db`);
      const here = createSqliteStore({ path });
      const there = createSqliteStore({ path });
      sqlites.push(here, there);
      const call = { tool: "create", args: { title: "at once" } };
      const writes = writeTool();
      const live = new AbortController();
      const first = await createGovernor(policy, { metrics: false, store: here })
        .startRun({ idempotencyScope: "s" })
        .call({ ...call, signal: live.signal }, writes.send);
      expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
      const next = await createGovernor(policy, { metrics: false, store: there })
        .startRun({ idempotencyScope: "s" })
        .call(call, writes.send);
      expect(next).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
    },
  );
});

describe.each(stores)(
  "a call given up on while its write's entry is freed, and a call of the same process, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "the identical call that claimed the freed entry before the host gave up waits for the hand-over, and gets the kept answer",
      async () => {
        const real = make();
        const cancel = new AbortController();
        let meanwhile: Promise<unknown> | undefined;
        let governor: Governor | undefined;
        const call = { tool: "create", args: { title: "claimed, then given up" } };
        const writes = writeTool();
        // The free lands at once and its answer takes 50 ms: the identical call (a proxy's next
        // window) is sent in that moment and claims the entry; then the host gives up on the first.
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (meanwhile === undefined && heldSettle(args) && args[1] === "failed") {
            meanwhile = governor && scoped(governor).call(call, writes.send);
            await new Promise((resolve) => setTimeout(resolve, 10));
            cancel.abort();
            await new Promise((resolve) => setTimeout(resolve, 40));
          }
        });
        governor = createGovernor(policy, { metrics: false, store });
        const first = await scoped(governor).call({ ...call, signal: cancel.signal }, writes.send);
        // Cut by its abort before the keep landed, the call does not wait to say it was kept.
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        expect(await meanwhile).toMatchObject({
          kind: "ok",
          value: ok("created 1"),
          replayed: true,
        });
        expect(writes.sent).toBe(1);
      },
    );

    it.runIf(ready)(
      "an identical call sent while the entry of a call nobody gave up on is freed is a new write, made once the free is done",
      async () => {
        const real = make();
        const live = new AbortController();
        let meanwhile: Promise<unknown> | undefined;
        let governor: Governor | undefined;
        const call = { tool: "create", args: { title: "claimed, not given up" } };
        const writes = writeTool();
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (meanwhile === undefined && heldSettle(args) && args[1] === "failed") {
            meanwhile = governor && scoped(governor).call(call, writes.send);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        });
        governor = createGovernor(policy, { metrics: false, store });
        const first = await scoped(governor).call({ ...call, signal: live.signal }, writes.send);
        expect(first).toEqual({ kind: "ok", value: ok("created 1"), attempts: 1, replayed: false });
        expect(await meanwhile).toMatchObject({
          kind: "ok",
          value: ok("created 2"),
          replayed: false,
        });
        expect(writes.sent).toBe(2);
      },
    );
  },
);

describe.each(stores)(
  "a kept answer of a tool whose results are not kept, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "idempotency.replay false: the answer given up on is not written to the store; the identical call is told the write was made, and it is not made again",
      async () => {
        const written: string[] = [];
        const store = onSettle(make(), async (target, ...args) => {
          written.push(JSON.stringify(args[2].result ?? null));
          return target.settle(...args);
        });
        const governor = createGovernor(
          { tools: { create: { effect: "mutating", idempotency: { replay: false } } } },
          { metrics: false, store },
        );
        const call = { tool: "create", args: { title: "sensitive" } };
        const writes = writeTool("secret token");
        const first = await scoped(governor).call(givenUp(call), writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("secret token 1"), kept: true });
        const again = await scoped(governor).call(call, writes.send);
        expect(again).toMatchObject({ kind: "ok", value: undefined, replayed: true });
        expect(writes.sent).toBe(1);
        // The host's own keep (`Run.keepAnswer`) follows the same policy.
        const other = { tool: "create", args: { title: "sensitive too" } };
        const keeper = scoped(governor);
        expect(await keeper.keepAnswer(other, ok("secret token 9"))).toBe(true);
        const next = await scoped(governor).call(other, writes.send);
        expect(next).toMatchObject({ kind: "ok", value: undefined, replayed: true });
        expect(writes.sent).toBe(1);
        expect(written.filter((w) => w.includes("secret"))).toEqual([]);
      },
    );
  },
);

describe.each(stores)(
  "an answer JSON cannot write, given up on, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "is not said kept, and its entry is freed: the identical call is a new write, not refused",
      async () => {
        const store = make();
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "bigint" } };
        let sent = 0;
        const send = async () => {
          sent += 1;
          return { content: [{ type: "text", text: `created ${sent}` }], count: BigInt(sent) };
        };
        const first = await scoped(governor).call(givenUp(call), send);
        expect(first).toMatchObject({ kind: "ok", replayed: false });
        expect(first).not.toMatchObject({ kept: true });
        await new Promise((resolve) => setTimeout(resolve, 50));
        const next = await scoped(governor).call(call, send);
        expect(next).toMatchObject({ kind: "ok", replayed: false });
        expect(sent).toBe(2);
      },
    );
  },
);

describe.each(stores)(
  "a last settle that landed and was answered with an error, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "a keep that landed and was spent before its error came is not made again: the next identical call is a new write",
      async () => {
        const real = make();
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const call = { tool: "create", args: { title: "kept, spent, then the error" } };
        const writes = writeTool();
        let spent: unknown;
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (spent === undefined && heldSettle(args) && args[1] === "succeeded") {
            // Landed; another process's identical call takes the answer before the error comes.
            spent = await scoped(elsewhere).call(call, writes.send);
            throw unavailable();
          }
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const first = await scoped(governor).call(givenUp(call), writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1"), kept: true });
        await until(() => spent !== undefined);
        expect(spent).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
        // Given once: the identical call after it is a new write, neither given it again nor refused.
        const next = await scoped(governor).call(call, writes.send);
        expect(next).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
        expect(writes.sent).toBe(2);
      },
    );

    it.runIf(ready)(
      "a free that landed and was claimed before its error came is not made again over the new claim: the identical call stays refused while that write is out",
      async () => {
        const real = make();
        const elsewhere = createGovernor(policy, { metrics: false, store: real });
        const call = { tool: "create", args: { title: "freed, claimed, then the error" } };
        const writes = writeTool();
        let release: () => void = () => undefined;
        const out = new Promise<void>((resolve) => {
          release = resolve;
        });
        // Sent, and answered once released.
        const slow = async () => {
          const answer = writes.send();
          await out;
          return answer;
        };
        let second: Promise<unknown> | undefined;
        let failed = false;
        // The store timeout of the first process: its free holds the entry for twice that.
        const storeTimeoutMs = 150;
        await real.get("warm");
        const store = onSettle(real, async (target, ...args) => {
          await target.settle(...args);
          if (second === undefined && heldSettle(args) && args[1] === "failed") {
            // Landed, and its answer comes after its hold ran out: another process's identical
            // write claims the entry and is out, then the error.
            await new Promise((resolve) => setTimeout(resolve, 2 * storeTimeoutMs + 50));
            second = scoped(elsewhere).call(call, slow);
            await until(() => writes.sent > 1);
            failed = true;
            throw unavailable();
          }
        });
        const governor = createGovernor(policy, { metrics: false, store, storeTimeoutMs });
        const live = new AbortController();
        const first = await scoped(governor).call({ ...call, signal: live.signal }, writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        await until(() => failed);
        // The free asked once more has had its time.
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(writes.sent).toBe(2);
        // The second write is out: an identical call is refused, not sent.
        const third = await scoped(governor).call(call, writes.send);
        expect(third.kind).not.toBe("ok");
        expect(writes.sent).toBe(2);
        release();
        expect(await second).toMatchObject({ kind: "ok", value: ok("created 2") });
      },
    );
  },
);

describe.each(stores)("Run.keepAnswer when the store fails, on the %s store", (_n, ready, make) => {
  it.runIf(ready)(
    "a keep that fails, and whose free of the entry fails once, leaves the entry free: it rejects, and the identical call is a new write",
    async () => {
      let failures = 0;
      const store = onSettle(make(), async (target, ...args) => {
        const [key] = args;
        if (key.startsWith("gd_") && failures < 2) {
          failures += 1;
          throw unavailable();
        }
        return target.settle(...args);
      });
      const governor = createGovernor(policy, { metrics: false, store });
      const call = { tool: "create", args: { title: "not kept" } };
      const kept = await scoped(governor)
        .keepAnswer(call, ok("lost"))
        .then(
          () => "kept",
          (error: unknown) => error,
        );
      expect(StoreError.isInstance(kept)).toBe(true);
      expect(failures).toBe(2);
      let sent = 0;
      const next = await scoped(governor).call(call, async () => {
        sent += 1;
        return ok("made");
      });
      expect(next).toMatchObject({ kind: "ok", value: ok("made"), replayed: false });
      expect(sent).toBe(1);
    },
  );
});

describe.each(stores)(
  "a kept answer given, whose spend fails once, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "the spend is asked once more: the answer is given once, and the identical call after it is a new write",
      async () => {
        let failures = 0;
        const store = onSettle(make(), async (target, ...args) => {
          const [key, state, options] = args;
          if (
            failures === 0 &&
            key.startsWith("gd_") &&
            state === "failed" &&
            options.ifSucceeded !== undefined
          ) {
            failures += 1;
            throw unavailable();
          }
          return target.settle(...args);
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "spent" } };
        expect(await scoped(governor).keepAnswer(call, ok("kept"))).toBe(true);
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok("made");
        };
        const given = await scoped(governor).call(call, send);
        expect(given).toMatchObject({ kind: "ok", value: ok("kept"), replayed: true });
        expect(failures).toBe(1);
        const next = await scoped(governor).call(call, send);
        expect(next).toMatchObject({ kind: "ok", value: ok("made"), replayed: false });
        expect(sent).toBe(1);
      },
    );
  },
);

describe.each(stores)(
  "the breaker's bookkeeping after a success, on the %s store",
  (_n, ready, make) => {
    // The breaker is told of a success while the write's entry is still held, before it is freed:
    // a host that gives up during that round trip still has the answer kept under the call's claim.
    // Told after the free, that abort would come once the entry is free, where another process's
    // identical call may claim it first.
    it.runIf(ready)(
      "an abort during the breaker's read after the success keeps the answer under the call's claim",
      async () => {
        const cancel = new AbortController();
        let recorded = false;
        const store = new Proxy(make(), {
          get(target, property) {
            const value = Reflect.get(target, property, target) as unknown;
            if (typeof value !== "function") return value;
            return async (...args: unknown[]) => {
              if (property === "get" && recorded) cancel.abort();
              const answer = await (value as (...a: unknown[]) => unknown).apply(target, args);
              const [key, state] = args as [string, string];
              if (property === "settle" && state === "succeeded" && key.startsWith("gk_")) {
                recorded = true;
              }
              return answer;
            };
          },
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "breaker" } };
        const writes = writeTool();
        const first = await scoped(governor).call({ ...call, signal: cancel.signal }, writes.send);
        expect(cancel.signal.aborted).toBe(true);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1"), kept: true });
        const again = await scoped(governor).call(call, writes.send);
        expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
        expect(writes.sent).toBe(1);
      },
    );
  },
);

describe.each(stores)(
  "a keep that landed though the store failed, its answer spent and the entry claimed by another process since, on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "the keep asked once more leaves the newer claim alone: the answer is given once, and the other write's success is its own",
      async () => {
        let other: Governor | undefined;
        let heldKey: string | undefined;
        let releaseC: () => void = () => {};
        let cStarted = false;
        let cDone: Promise<unknown> | undefined;
        let failures = 0;
        let keeps = 0;
        const writes = writeTool();
        const call = { tool: "create", args: { title: "kept, spent, claimed" } };
        const store = onSettle(make(), async (target, ...args) => {
          const [key, state] = args;
          if (heldSettle(args) && state === "succeeded") keeps += 1;
          if (failures === 0 && heldSettle(args) && state === "succeeded") {
            failures += 1;
            heldKey = key;
            // The keep lands, but its answer is lost (a connection that broke after the command).
            await target.settle(...args);
            other = createGovernor(policy, { metrics: false, store: target });
            // Another process: its identical call gets the kept answer (and spends it)…
            const b = await scoped(other).call(call, writes.send);
            expect(b).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
            // …and its next identical call claims the entry and is making the write.
            cDone = scoped(other).call(call, async () => {
              cStarted = true;
              await new Promise<void>((resolve) => {
                releaseC = resolve;
              });
              return writes.send();
            });
            await until(() => cStarted);
            throw unavailable();
          }
          return target.settle(...args);
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const first = await scoped(governor).call(givenUp(call), writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        // The keep's second asking, if any, has had its time.
        await until(() => keeps >= 2, 500);
        // The entry is still the other process's claim, its write in flight: no kept answer.
        expect(heldKey).toBeDefined();
        expect((await store.entry(heldKey as string))?.state).toBe("pending");
        releaseC();
        const c = await cDone;
        expect(c).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
        // The next identical call is a new write: the first answer is not given a second time.
        const d = await (other as Governor)
          .startRun({ idempotencyScope: "s" })
          .call(call, writes.send);
        expect(d).toMatchObject({ kind: "ok", value: ok("created 3"), replayed: false });
        expect(writes.sent).toBe(3);
      },
    );
  },
);
