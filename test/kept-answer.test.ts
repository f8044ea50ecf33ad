// An answer kept in the ledger for the identical call (`Run.keepAnswer`, docs/idempotency.md "An
// answer the host never got"), on every real store: the write is not made again by a run of the
// scope, in another governor sharing the store (a restarted process), once, within its time.

import { createGovernor, createMemoryStore, GovernorError } from "@governor/core";
import { describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { everyStore } from "./every-store.ts";
import { ok, onSettle, scoped, writeTool } from "./support/ledger-calls.ts";

const redis = await sharedRedis("kept answers on Redis");
const lost = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

const { stores } = everyStore(redis, "governor-kept-");

const policy = {
  tools: {
    create: { effect: "mutating" as const },
    lookup: { effect: "read_only" as const },
  },
};

describe.each(stores)(
  "a call given up on as its write succeeded, on the %s store (the run keeps its answer)",
  (_name, ready, make) => {
    it.runIf(ready)(
      "its signal aborted in the host's moment before the answer: the answer is kept before the write's entry is freed, and the identical call sent in that moment gets it",
      async () => {
        const store = make();
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "given up" } };
        const writes = writeTool();
        const cancel = new AbortController();
        let meanwhile: Promise<unknown> | undefined;
        const first = await scoped(governor).call(
          {
            ...call,
            signal: cancel.signal,
            // The host gives up as the answer comes, and sends the identical call at once.
            beforeAnswer: async () => {
              cancel.abort();
              meanwhile = scoped(governor).call(call, writes.send);
              await new Promise((resolve) => setTimeout(resolve, 20));
            },
          },
          writes.send,
        );
        expect(first).toEqual({
          kind: "ok",
          value: ok("created 1"),
          attempts: 1,
          replayed: false,
          kept: true,
        });
        expect(await meanwhile).toMatchObject({
          kind: "ok",
          value: ok("created 1"),
          replayed: true,
        });
        expect(writes.sent).toBe(1);
        // Given once: the identical call after it is a new write.
        const third = await scoped(governor).call(call, writes.send);
        expect(third).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
      },
    );

    it.runIf(ready)(
      "its signal aborted while the success was recorded: kept; a call nobody gave up on frees the entry",
      async () => {
        const real = make();
        const cancel = new AbortController();
        // The abort comes as the call's own key is settled `succeeded` (a round trip to the store).
        const store = onSettle(real, async (target, ...args) => {
          if (args[1] === "succeeded" && !/^g[dt]_/.test(args[0])) cancel.abort();
          return target.settle(...args);
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "recorded" } };
        const writes = writeTool();
        const first = await scoped(governor).call({ ...call, signal: cancel.signal }, writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1"), kept: true });
        const again = await scoped(governor).call(call, writes.send);
        expect(again).toMatchObject({ kind: "ok", value: ok("created 1"), replayed: true });
        expect(writes.sent).toBe(1);
        // A call with a signal nobody aborted: nothing kept, the identical call is a new write.
        const live = new AbortController();
        const other = { tool: "create", args: { title: "live" } };
        const made = await scoped(governor).call({ ...other, signal: live.signal }, writes.send);
        expect(made).toEqual({ kind: "ok", value: ok("created 2"), attempts: 1, replayed: false });
        const next = await scoped(governor).call(other, writes.send);
        expect(next).toMatchObject({ kind: "ok", value: ok("created 3"), replayed: false });
      },
    );
  },
);

describe.each(stores)(
  "a call given up on while its write's entry is freed, on the %s store",
  (_name, ready, make) => {
    it.runIf(ready)(
      "the identical call sent right after gets the answer kept after the free, not a second write",
      async () => {
        const real = make();
        const cancel = new AbortController();
        let meanwhile: Promise<unknown> | undefined;
        let governor: ReturnType<typeof createGovernor> | undefined;
        const call = { tool: "create", args: { title: "freed" } };
        const writes = writeTool();
        // The free of the write's entry is made at once, its answer comes 50 ms later (a round trip):
        // the host gives up and sends the identical call in that moment.
        const store = onSettle(real, async (target, ...args) => {
          const [key, state, options] = args;
          await target.settle(...args);
          if (meanwhile === undefined && key.startsWith("gd_") && state === "failed") {
            if (options.claimedAt === undefined) return;
            cancel.abort();
            meanwhile = governor && scoped(governor).call(call, writes.send);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        });
        governor = createGovernor(policy, { metrics: false, store });
        const first = await scoped(governor).call({ ...call, signal: cancel.signal }, writes.send);
        expect(first).toMatchObject({ kind: "ok", value: ok("created 1") });
        expect(await meanwhile).toMatchObject({
          kind: "ok",
          value: ok("created 1"),
          replayed: true,
        });
        expect(writes.sent).toBe(1);
      },
    );
  },
);

describe.each(stores)("an answer kept in the ledger on the %s store", (_name, ready, make) => {
  it.runIf(ready)(
    "answers the next identical call of the scope, in another governor on the store, once; the write made once",
    async () => {
      const store = make();
      let t = Date.now();
      const now = () => t;
      const first = createGovernor(policy, { metrics: false, store, now });
      const call = { tool: "create", args: { title: "t" } };
      const writes = writeTool();
      const run = first.startRun({ idempotencyScope: "session" });
      const outcome = await run.call(call, writes.send);
      expect(outcome).toMatchObject({ kind: "ok", replayed: false });
      // The host cancelled as it was answered: the answer is kept.
      expect(await run.keepAnswer(call, (outcome as { value: unknown }).value)).toBe(true);
      run.end();
      // Another process on the same store (the first one restarted).
      const second = createGovernor(policy, { metrics: false, store, now });
      t += 1_000;
      const again = await second.startRun({ idempotencyScope: "session" }).call(call, writes.send);
      expect(again).toEqual({ kind: "ok", value: ok("created 1"), attempts: 0, replayed: true });
      expect(writes.sent).toBe(1);
      // Given once: the identical call after it is a new write.
      const third = await second.startRun({ idempotencyScope: "session" }).call(call, writes.send);
      expect(third).toMatchObject({ kind: "ok", value: ok("created 2"), replayed: false });
      expect(writes.sent).toBe(2);
      // Another scope never gets it.
      const kept = first.startRun({ idempotencyScope: "session" });
      expect(await kept.keepAnswer(call, ok("created 2"))).toBe(true);
      const elsewhere = await first.startRun({ idempotencyScope: "other" }).call(call, writes.send);
      expect(elsewhere).toMatchObject({ kind: "ok", value: ok("created 3"), replayed: false });
    },
  );

  it.runIf(ready)(
    "keeps it for its time only; a spent or stale answer leaves the entry to the next write, which holds it while out",
    async () => {
      const store = make();
      let t = Date.now();
      const governor = createGovernor(policy, { metrics: false, store, now: () => t });
      const call = { tool: "create", args: { title: "late" } };
      const run = scoped(governor);
      expect(await run.keepAnswer(call, ok("kept"), 60_000)).toBe(true);
      t += 60_001;
      // Past its time: the write is sent, and while it is out an identical write under another
      // tool-call id is told it is in progress (the entry was claimed for it, not left settled).
      let release: () => void = () => undefined;
      const out = new Promise<void>((resolve) => {
        release = resolve;
      });
      let sent = 0;
      const slow = scoped(governor).call(call, async () => {
        sent += 1;
        await out;
        return ok("made");
      });
      await expect.poll(() => sent).toBe(1);
      const meanwhile = await scoped(governor).call({ ...call, callId: "other" }, async () => {
        sent += 1;
        return ok("made twice");
      });
      expect(meanwhile.kind).toBe("model");
      expect(JSON.stringify(meanwhile)).toMatch(/still in progress/);
      release();
      expect(await slow).toMatchObject({ kind: "ok", value: ok("made"), replayed: false });
      expect(sent).toBe(1);
    },
  );

  it.runIf(ready)(
    "keeps no read, and none while an identical write is in doubt (that write is the repeat)",
    async () => {
      const store = make();
      const governor = createGovernor(policy, { metrics: false, store });
      const run = scoped(governor);
      expect(await run.keepAnswer({ tool: "lookup", args: { id: 1 } }, ok("read"))).toBe(false);
      const call = { tool: "create", args: { title: "doubt" } };
      const lostCall = await run.call(call, async () => {
        throw lost();
      });
      expect(lostCall).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
      const next = scoped(governor);
      expect(await next.keepAnswer(call, ok("a guess"))).toBe(false);
      let sent = 0;
      const again = await next.call(call, async () => {
        sent += 1;
        return ok("made");
      });
      expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
      expect(sent).toBe(0);
    },
  );
});

describe("keepAnswer's arguments", () => {
  it("refuses a ttlMs that is not a positive finite number of ms, naming what is accepted", async () => {
    const run = createGovernor(policy, { metrics: false }).startRun();
    for (const ttlMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "10" as unknown as number]) {
      const error = await run.keepAnswer({ tool: "create" }, ok("x"), ttlMs).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(GovernorError.isInstance(error)).toBe(true);
      expect((error as GovernorError).code).toBe("invalid_options");
      expect((error as Error).message).toMatch(/ttlMs must be a positive finite number of ms/);
    }
  });

  it("keeps nothing for a run without a scope once it ended (no identical call of it can come)", async () => {
    const governor = createGovernor(policy, { metrics: false });
    const run = governor.startRun();
    const call = { tool: "create", args: { title: "own" } };
    expect(await run.keepAnswer(call, ok("x"))).toBe(true);
    const ended = governor.startRun();
    ended.end();
    expect(await ended.keepAnswer(call, ok("x"))).toBe(false);
  });

  it("keeps nothing for arguments that are not JSON (such a call was never sent)", async () => {
    const run = createGovernor(policy, { metrics: false }).startRun();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(await run.keepAnswer({ tool: "create", args: cyclic }, ok("x"))).toBe(false);
  });

  it("keeps nothing for an answer JSON cannot write, and leaves the entry free", async () => {
    const store = createMemoryStore();
    const governor = createGovernor(policy, { metrics: false, store });
    const call = { tool: "create", args: { title: "big" } };
    const run = scoped(governor);
    expect(await run.keepAnswer(call, { amount: 10n })).toBe(false);
    let sent = 0;
    const made = await scoped(governor).call(call, async () => {
      sent += 1;
      return ok("made");
    });
    expect(made).toMatchObject({ kind: "ok", replayed: false });
    expect(sent).toBe(1);
  });
});
