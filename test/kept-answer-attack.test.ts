import { createGovernor, GovernorError, type Store } from "@governor/core";
import { describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { everyStore } from "./every-store.ts";
import { ok, onSettle, scoped, writeTool } from "./support/ledger-calls.ts";

const redis = await sharedRedis("kept-answer attacks on Redis");

const { stores } = everyStore(redis, "governor-kept-attack-");

const policy = { tools: { create: { effect: "mutating" as const } } };

/** `store`, whose second unconditional `failed` settle of a content entry is 150 ms late. */
function slowSecondFree(store: Store): Store {
  let frees = 0;
  return onSettle(store, async (target, ...args) => {
    const [key, state, options] = args;
    if (key.startsWith("gd_") && state === "failed" && options.claimedAt === undefined) {
      frees += 1;
      if (frees === 2) await new Promise((resolve) => setTimeout(resolve, 150));
    }
    return target.settle(...args);
  });
}

describe.each(stores)(
  "the kept answer met by identical calls at once on the %s store",
  (_n, ready, make) => {
    it.runIf(ready)(
      "two identical calls at once: the kept answer is given once, the other call is not answered with it without being made",
      async () => {
        const store = make();
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "twice" } };
        expect(await scoped(governor).keepAnswer(call, ok("made 0"))).toBe(true);
        const writes = writeTool("made");
        const [a, b] = await Promise.all([
          scoped(governor).call({ ...call, callId: "a" }, writes.send),
          scoped(governor).call({ ...call, callId: "b" }, writes.send),
        ]);
        const replayed = [a, b].filter((o) => o.kind === "ok" && o.replayed);
        // Given once: the other call is a new write (made, or refused as in progress), never told
        // the kept answer is its own.
        expect(replayed).toHaveLength(1);
        expect(writes.sent).toBeLessThanOrEqual(1);
      },
    );

    it.runIf(ready)(
      "two identical calls at once meet a kept answer past its time: the write is made once, the other refused while it is out",
      async () => {
        // The real store; the second call's freeing of the stale entry is slow (it lands once the
        // first call freed the entry and claimed it for its write).
        const store = slowSecondFree(make());
        let t = Date.now();
        const governor = createGovernor(policy, { metrics: false, store, now: () => t });
        const call = { tool: "create", args: { title: "stale" } };
        expect(await scoped(governor).keepAnswer(call, ok("kept"), 1_000)).toBe(true);
        t += 1_001;
        let sent = 0;
        let release: () => void = () => undefined;
        const out = new Promise<void>((resolve) => {
          release = resolve;
        });
        const send = async () => {
          sent += 1;
          await out;
          return ok(`made ${sent}`);
        };
        const a = scoped(governor).call({ ...call, callId: "a" }, send);
        const b = scoped(governor).call({ ...call, callId: "b" }, send);
        // Both are past the ledger (sent, or answered) before either write is answered.
        await new Promise((resolve) => setTimeout(resolve, 300));
        release();
        const outcomes = await Promise.all([a, b]);
        expect(sent).toBe(1);
        expect(outcomes.filter((o) => o.kind === "ok")).toHaveLength(1);
      },
    );

    it.runIf(ready)(
      "a call that took the kept answer and could not record it leaves it to the next identical call",
      async () => {
        // The real store, but the settles of a call's own key (gk_) `succeeded` fail, until `down` ends.
        const real = make();
        let down = true;
        let failed = false;
        const store = onSettle(real, async (target, ...args) => {
          const [key, state] = args;
          if (down && state === "succeeded" && !/^g[dt]_/.test(key)) {
            failed = true;
            throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
              code: "ECONNREFUSED",
            });
          }
          return target.settle(...args);
        });
        const governor = createGovernor(policy, { metrics: false, store });
        const call = { tool: "create", args: { title: "trouble" } };
        expect(await scoped(governor).keepAnswer(call, ok("kept"))).toBe(true);
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok("made");
        };
        // The store's failure goes to the host, not the model.
        const first = await scoped(governor)
          .call({ ...call, callId: "a" }, send)
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        expect(GovernorError.isInstance(first) && first.code).toBe("host_error");
        expect(failed).toBe(true);
        down = false;
        // The next identical call gets the answer now, not told for a lease that a write is out.
        const next = await scoped(governor).call({ ...call, callId: "b" }, send);
        expect(next).toMatchObject({ kind: "ok", value: ok("kept"), replayed: true });
        expect(sent).toBe(0);
      },
    );

    it.runIf(ready)(
      "an answer kept while a call is giving the one before is given next, not freed with it",
      async () => {
        // The real store; while a call that took the first kept answer records it on its own key
        // (before it spends the answer), a keeper keeps a second answer for an identical write.
        const real = make();
        const governor = createGovernor(policy, { metrics: false, store: real });
        const call = { tool: "create", args: { title: "kept twice" } };
        let keptSecond: Promise<boolean> | undefined;
        const store = onSettle(real, async (target, ...args) => {
          const [key, state] = args;
          if (keptSecond === undefined && state === "succeeded" && !/^g[dt]_/.test(key)) {
            keptSecond = scoped(governor).keepAnswer(call, ok("kept 2"));
            await keptSecond;
          }
          return target.settle(...args);
        });
        const giving = createGovernor(policy, { metrics: false, store });
        expect(await scoped(governor).keepAnswer(call, ok("kept 1"))).toBe(true);
        let sent = 0;
        const send = async () => {
          sent += 1;
          return ok("made");
        };
        const first = await scoped(giving).call({ ...call, callId: "a" }, send);
        expect(first).toMatchObject({ kind: "ok", value: ok("kept 1"), replayed: true });
        expect(await keptSecond).toBe(true);
        // The second answer is the next identical call's: its write is not made again.
        const next = await scoped(governor).call({ ...call, callId: "b" }, send);
        expect(next).toMatchObject({ kind: "ok", value: ok("kept 2"), replayed: true });
        expect(sent).toBe(0);
      },
    );
  },
);
