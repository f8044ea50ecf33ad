import { describe, expect, it } from "vitest";
import { createMemoryStore, type MemoryStore } from "../store/memory-store.ts";
import type { ClaimOptions, Store } from "../store/store.ts";
import { createGovernor } from "./governor.ts";
import type { VerifyResult } from "./hooks.ts";
import { laterClaims, memoryStoreWith, signalled } from "./store-doubles.support.ts";
import type { CallOutcome } from "./types.ts";

/**
 * A claim may take over a key left `uncertain` when the server deduplicates by key: the answer
 * says so (`retaken`). An attempt under such a key that is
 * then not sent settles it back to `uncertain`: settled `failed`, the ledger would record a write
 * that may have happened as not made, and a person checking the writes in doubt would not see it.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
/** The connection dropped mid-call: the write may have happened. */
const timeout = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
/** The server refused the connection: the attempt was not sent. */
const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });

const honoursKeys = {
  tools: {
    pay: { effect: "mutating" as const, idempotency: { honorsKeys: true }, retry: { attempts: 1 } },
  },
};

/** The key of a write in doubt: a first run's attempt of `callId` "c1" in scope "job" timed out. */
async function keyInDoubt(store: Store): Promise<string> {
  const governor = createGovernor(honoursKeys, { metrics: false, random: () => 0, store });
  const run = governor.startRun({ idempotencyScope: "job" });
  const doubt = await run.call({ tool: "pay", args: { amount: 1 }, callId: "c1" }, async () => {
    throw timeout();
  });
  run.end();
  expect(doubt).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
  const key = doubt.kind === "stop" ? doubt.idempotencyKey : undefined;
  expect(key).toMatch(/./);
  expect((await store.entry(key as string))?.state).toBe("uncertain");
  return key as string;
}

function text(outcome: CallOutcome<unknown>): string {
  return outcome.kind === "ok" ? "" : (outcome.result.content[0]?.text ?? "");
}

describe("a key taken over from a write in doubt stays in doubt when its attempt is not sent", () => {
  it("the call is aborted after its claim answered (an async retry-budget count)", async () => {
    const memory = createMemoryStore();
    const controller = new AbortController();
    let armed = false;
    // A remote store's count; the host aborts the call as the count's answer arrives, before
    // the run takes its next step (e.g. on another reply of the same network read).
    const store = memoryStoreWith(
      {
        increment: (k, b, t) => {
          if (!armed) return memory.increment(k, b, t);
          const answer = new Promise<number>((resolve) => {
            setTimeout(() => resolve(memory.increment(k, b, t)), 5);
          });
          queueMicrotask(() => void answer.then(() => controller.abort()));
          return answer;
        },
      },
      memory,
    );
    const key = await keyInDoubt(store);
    armed = true;
    const governor = createGovernor(honoursKeys, { metrics: false, random: () => 0, store });
    const run = governor.startRun({ idempotencyScope: "job" });
    let payments = 0;
    const outcome = await run.call(
      { tool: "pay", args: { amount: 1 }, callId: "c1", signal: controller.signal },
      async () => {
        payments += 1;
        return ok("paid");
      },
    );
    expect(controller.signal.aborted).toBe(true);
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(payments).toBe(0);
    // Was `failed`: the first run's write, which may have happened, recorded as not made.
    expect(memory.entry(key)?.state).toBe("uncertain");
    // The call itself was not made, and names no key of its own.
    expect(text(outcome)).toContain("the call was not made");
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeUndefined();
  });

  it("the attempt fails before it is sent (connection refused)", async () => {
    const memory = createMemoryStore();
    const key = await keyInDoubt(memory);
    const governor = createGovernor(honoursKeys, {
      metrics: false,
      random: () => 0,
      store: memory,
    });
    const run = governor.startRun({ idempotencyScope: "job" });
    const sent: (string | undefined)[] = [];
    await run.call({ tool: "pay", args: { amount: 1 }, callId: "c1" }, async (ctx) => {
      sent.push(ctx.idempotencyKey);
      throw refused();
    });
    run.end();
    expect(sent).toEqual([key]);
    // Was `failed`: this attempt was not sent, the first run's may have written.
    expect(memory.entry(key)?.state).toBe("uncertain");
  });

  it("an attempt that fails before it is sent still frees a key that was not in doubt", async () => {
    const memory = createMemoryStore();
    const governor = createGovernor(honoursKeys, {
      metrics: false,
      random: () => 0,
      store: memory,
    });
    const run = governor.startRun({ idempotencyScope: "job" });
    let key: string | undefined;
    await run.call({ tool: "pay", args: { amount: 1 }, callId: "c1" }, async (ctx) => {
      key = ctx.idempotencyKey;
      throw refused();
    });
    run.end();
    expect(memory.entry(key as string)?.state).toBe("failed");
  });

  it("the claim answers after a parallel write in doubt ended the run (verify found no effect)", async () => {
    const memory = createMemoryStore();
    let claims = 0;
    let startSecond = () => {};
    // Claims answer later (a remote store): the first call's retry claim (the third: its first
    // attempt claimed its key and its content's entry) once an identical second call, started as
    // it is issued and whose claims answer at once, has ended the run. Waiting for that end, not
    // for a fixed time a loaded machine can overrun (then the retry claim answered first).
    const claim = async (k: string, h: string, o: ClaimOptions) => {
      claims += 1;
      if (claims === 3) {
        startSecond();
        await second?.catch(() => undefined);
      }
      return memory.claim(k, h, o);
    };
    const store = memoryStoreWith({ claim }, memory, { release: true });
    let verifies = 0;
    const governor = createGovernor(
      {
        tools: {
          pay: { effect: "mutating", idempotency: { verify: true }, retry: { attempts: 2 } },
        },
      },
      {
        metrics: false,
        random: () => 0,
        store,
        // The first call's lost answer is checked: no effect. The second's: unknown.
        verify: { pay: () => ({ effect: ++verifies === 1 ? "absent" : "unknown" }) },
      },
    );
    const run = governor.startRun();
    const sent: (string | undefined)[] = [];
    let second: Promise<CallOutcome<unknown>> | undefined;
    startSecond = () => {
      second = run.call({ tool: "pay", args: { amount: 1 } }, async (ctx) => {
        sent.push(ctx.idempotencyKey);
        throw timeout();
      });
    };
    const first = await run.call({ tool: "pay", args: { amount: 1 } }, async (ctx) => {
      sent.push(ctx.idempotencyKey);
      throw timeout();
    });
    const doubt = await (second as Promise<CallOutcome<unknown>>);
    expect(doubt).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = doubt.kind === "stop" ? doubt.idempotencyKey : undefined;
    expect(key).toMatch(/./);
    // The first call's retry was not sent: its claim met the second call's key in doubt (taken
    // over until the fix below, now refused: its verify step did not see that write).
    expect(sent).toEqual([key, key]);
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    // Was `failed`: the second call's write, which may have happened, recorded as not made.
    expect(memory.entry(key as string)?.state).toBe("uncertain");
  });
});

describe("a call not sent because another call's write ended the run", () => {
  it("says it was not made, not that its write may have happened", async () => {
    const memory = createMemoryStore();
    // The second write's claim answers after the first write's lost answer stopped the run.
    const afterFirst = signalled();
    const store = laterClaims(memory, [0, afterFirst.promise]);
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating", retry: { attempts: 1 } } } },
      { metrics: false, random: () => 0, store },
    );
    const run = governor.startRun();
    let payments = 0;
    const doubt = run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      throw timeout();
    });
    void doubt.then(afterFirst.resolve);
    const other = run.call({ tool: "pay", args: { amount: 2 } }, async () => {
      payments += 1;
      return ok("paid");
    });
    const first = await doubt;
    expect(text(first)).toContain("may have happened");
    const second = await other;
    expect(payments).toBe(0);
    // The run's reason (counted as the run's), but this call's own text and no key.
    expect(second).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(second.kind === "stop" && second.idempotencyKey).toBeUndefined();
    expect(text(second)).toBe(
      "pay: the call was not made: the run had already ended, stopped by another call's write. The run stops here.",
    );
  });

  it("a retry cut by it, after an attempt the server refused (503), says the call failed, not that it was not made", async () => {
    const governor = createGovernor(
      { tools: { pay: { effect: "mutating", retry: { attempts: 3, baseDelayMs: 30 } } } },
      { metrics: false, random: () => 0.999, store: createMemoryStore() },
    );
    const run = governor.startRun();
    let sent = 0;
    const refused = run.call({ tool: "pay", args: { amount: 2 } }, async () => {
      sent += 1;
      throw Object.assign(new Error("upstream 503 Service Unavailable"), { status: 503 });
    });
    // During the first call's backoff, this write's lost answer stops the run.
    const doubt = await run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw timeout();
    });
    expect(doubt).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const outcome = await refused;
    expect(sent).toBe(1);
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeUndefined();
    // Was "the call was not made": it was made, and the server answered that it failed.
    expect(text(outcome)).toBe(
      "pay: the call failed and was not tried again: the run had already ended, stopped by another call's write. The run stops here.",
    );
  });

  it("a retry cut by the run's end says its earlier attempt may have written, whatever ended it", async () => {
    const memory = createMemoryStore();
    const governor = createGovernor(
      {
        tools: {
          pay: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { attempts: 3 } },
          look: { effect: "read_only" },
        },
        budgets: { calls: 2 },
      },
      { metrics: false, random: () => 0, store: memory },
    );
    const run = governor.startRun();
    let reads: Promise<unknown> | undefined;
    const write = run.call({ tool: "pay", args: { amount: 1 } }, async () => {
      // During this attempt a read spends the last call of the budget, and the next stops the run.
      reads ??= (async () => {
        await run.call({ tool: "look", args: {} }, async () => ok("seen"));
        await run.call({ tool: "look", args: {} }, async () => ok("seen"));
      })();
      await reads;
      throw timeout();
    });
    const outcome = await write;
    expect(run.ended).toBe(true);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    const key = outcome.kind === "stop" ? outcome.idempotencyKey : undefined;
    expect(key).toMatch(/./);
    expect(text(outcome)).toContain("an earlier attempt of this write may have taken effect");
  });
});

describe("a retry after a verify step found no effect", () => {
  /**
   * A first call's attempt is lost; its verify step finds no effect, and its key is freed when the
   * retry is decided. As the key's own settle is made, `onFreed` runs (an identical call starts).
   */
  function freedKeyStore(memory: MemoryStore, onFreed: () => void): Store {
    const settle: Store["settle"] = (k, st, o) => {
      memory.settle(k, st, o);
      // The key's own settle (its content's entry, doubt.ts, is settled just before it).
      if (st === "failed" && k.startsWith("gk_")) onFreed();
    };
    return memoryStoreWith({ settle }, memory, { release: true });
  }

  const payVerified = {
    tools: {
      pay: {
        effect: "mutating" as const,
        idempotency: { verify: true },
        retry: { attempts: 2, baseDelayMs: 40 },
      },
    },
  };

  /**
   * Two identical payments meet on one key. The first call's attempt is lost, its verify step
   * finds no effect and its key is freed; as it is, the second call starts (in the same run, or in
   * another run of the scope with the same callId: the same key), claims it, is sent, and its
   * answer is lost too. The first call retries 40 ms later. `verifyAgain` answers every verify
   * step after the first call's.
   */
  async function freedKeyRace(
    secondIn: "the same run" | "another run",
    verifyAgain: () => Promise<VerifyResult>,
  ) {
    const memory = createMemoryStore();
    let startSecond = () => {};
    const store = freedKeyStore(memory, () => startSecond());
    let verifies = 0;
    const governor = createGovernor(payVerified, {
      metrics: false,
      random: () => 0.999,
      store,
      verify: {
        pay: async () => {
          verifies += 1;
          return verifies === 1 ? { effect: "absent" } : verifyAgain();
        },
      },
    });
    const sameRun = secondIn === "the same run";
    const scope = sameRun ? {} : { idempotencyScope: "job" };
    const call = () => ({ tool: "pay", args: { amount: 1 }, ...(!sameRun && { callId: "c1" }) });
    const run = governor.startRun(scope);
    const sent: string[] = [];
    let second: Promise<CallOutcome<unknown>> | undefined;
    startSecond = () => {
      startSecond = () => {};
      second = (sameRun ? run : governor.startRun(scope)).call(call(), async () => {
        sent.push("second");
        throw timeout();
      });
    };
    const first = await run.call(call(), async () => {
      sent.push("first");
      if (sent.length === 1) throw timeout();
      return ok("paid");
    });
    return { first, second: second as Promise<CallOutcome<unknown>>, sent, memory };
  }

  it("an identical call of the same run that claimed the freed key holds it until its own verify step answered: the retry is refused as in progress", async () => {
    const { first, second, sent } = await freedKeyRace("the same run", async () => {
      // The second call's write is found later: it happened.
      await new Promise((resolve) => setTimeout(resolve, 150));
      return { effect: "present", result: ok("paid") };
    });
    // The second call's key is settled once, when its verify step answered: until then it is in
    // flight, and the first call's retry (40 ms later) is refused as such, never sent.
    expect(first).toMatchObject({ kind: "model", reason: "conflict" });
    expect(text(first)).toMatch(/identical call is still in progress/);
    const found = await second;
    expect(found).toMatchObject({ kind: "ok", replayed: true, value: ok("paid") });
    // Was ["first", "second", "first"]: the first call's retry took over the second call's key
    // in doubt and paid again, although the second call's payment had gone through.
    expect(sent).toEqual(["first", "second"]);
  });

  it("does not take over an identical call's write in doubt: its verify did not see that write", async () => {
    // The second call's verify step cannot tell: it stops, its key in doubt, before the first
    // call's retry claims it.
    const { first, second, sent, memory } = await freedKeyRace("another run", async () => ({
      effect: "unknown",
    }));
    const doubt = await second;
    expect(doubt).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = doubt.kind === "stop" ? doubt.idempotencyKey : undefined;
    expect(key).toMatch(/./);
    expect(memory.entry(key as string)?.state).toBe("uncertain");
    // Were the retry to take over the key in doubt, the first call would pay again although the
    // second call's payment may have gone through.
    expect(sent).toEqual(["first", "second"]);
    expect(first).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      idempotencyKey: key,
    });
    expect(text(first)).toContain("an earlier attempt of this write may have taken effect");
  });
});
