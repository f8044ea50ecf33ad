import { describe, expect, it } from "vitest";
import type { PolicyInput } from "../policy/policy.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import type { GovernorEvent } from "../telemetry/events.ts";
import { createGovernor, type GovernorOptions } from "./governor.ts";
import type { AttemptContext, CallOutcome } from "./run.ts";

/** Invariants under parallel calls, hostile hooks and executors that ignore their signal. */

const text = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const fast = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };
const gov = (policy: PolicyInput = {}, options: GovernorOptions = {}) =>
  createGovernor(policy, { metrics: false, random: () => 0.5, ...options });
const modelText = (o: CallOutcome<unknown>) => (o.kind === "ok" ? "" : o.result.content[0].text);

describe("parallel calls of one run", () => {
  it("cannot overshoot the corrections budget", async () => {
    const run = gov({
      budgets: { corrections: 1 },
      tools: { t: { effect: "read_only" } },
    }).startRun();
    const outcomes = await Promise.all(
      [1, 2, 3].map((i) =>
        run.call({ tool: "t", args: { i } }, async () =>
          text(`Invalid argument: limit ${i} is too large`),
        ),
      ),
    );
    expect(outcomes.filter((o) => o.kind === "model")).toHaveLength(1);
    expect(run.summary()).toMatchObject({ reason: "budget_exhausted", budget: "corrections" });
  });

  it("cannot slip past the repeat limit", async () => {
    const run = gov({ tools: { get: { effect: "read_only" } } }).startRun();
    const outcomes = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        run.call({ tool: "get", args: { i } }, async () => text(`No note with id "n${i}"`)),
      ),
    );
    expect(outcomes.filter((o) => o.kind === "model")).toHaveLength(2);
    expect(run.summary().reason).toBe("repeated_failure");
  });

  it("cannot overshoot the retries budget", async () => {
    const run = gov({
      budgets: { retries: 1 },
      tools: { t: { effect: "read_only", ...fast } },
    }).startRun();
    await Promise.all(
      [1, 2, 3, 4].map((i) =>
        run.call({ tool: "t", args: { i } }, async () => text("503 Service Unavailable")),
      ),
    );
    expect(run.summary().retries).toBeLessThanOrEqual(1);
  });

  it("stops retrying once the failures budget is spent", async () => {
    const run = gov({
      budgets: { failures: 1 },
      tools: { t: { effect: "read_only", ...fast } },
    }).startRun();
    let attempts = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      attempts += 1;
      return text("503 Service Unavailable");
    });
    expect(attempts).toBe(2);
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
  });

  it("no call keeps retrying after a parallel call stopped the run", async () => {
    const run = gov({
      tools: {
        read: { effect: "read_only", retry: { baseDelayMs: 30, maxDelayMs: 30 } },
        write: {},
      },
    }).startRun();
    let reads = 0;
    const read = run.call({ tool: "read" }, async () => {
      reads += 1;
      return text("503 Service Unavailable");
    });
    const write = run.call({ tool: "write" }, async () => {
      throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    });
    expect(await write).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect((await read).kind).toBe("stop");
    expect(reads).toBe(1);
  });
});

describe("what the tool threw", () => {
  it("a tool's own error code is not a lost connection", async () => {
    const run = gov({ tools: { create_user: { effect: "mutating" } } }).startRun();
    const outcome = await run.call({ tool: "create_user" }, async () => {
      throw Object.assign(
        new Error('duplicate key value violates unique constraint "users_email_key"'),
        { code: "23505" },
      );
    });
    expect(outcome.kind).toBe("model");
    expect(modelText(outcome)).not.toMatch(/may have happened/);
  });

  it("a success the ledger cannot store (a BigInt) is still a success, and the key is settled", async () => {
    const store = createMemoryStore();
    const run = gov({ tools: { w: { effect: "mutating" } } }, { store }).startRun();
    let key: string | undefined;
    const outcome = await run.call({ tool: "w", callId: "c1" }, async (ctx: AttemptContext) => {
      key = ctx.idempotencyKey;
      return { id: 10n };
    });
    expect(outcome).toMatchObject({ kind: "ok", value: { id: 10n } });
    expect(store.entry(key as string)?.state).toBe("succeeded");
  });

  it("the same with a store that answers later: the result is dropped, the key is settled", async () => {
    const inner = createMemoryStore();
    const settles: unknown[] = [];
    const store: Store = {
      get: async (k) => inner.get(k),
      set: async (k, v, ttl) => inner.set(k, v, ttl),
      increment: async (k, by, ttl) => inner.increment(k, by, ttl),
      claim: async (k, h, o) => inner.claim(k, h, o),
      settle: async (k, state, o) => {
        // The key's own settles (not its content's entry: doubt.ts).
        if (k.startsWith("gk_")) settles.push(o.result);
        inner.settle(k, state, o);
      },
      entry: async (k) => inner.entry(k),
    };
    const run = gov({ tools: { w: { effect: "mutating" } } }, { store }).startRun();
    let key: string | undefined;
    const outcome = await run.call({ tool: "w", callId: "c1" }, async (ctx: AttemptContext) => {
      key = ctx.idempotencyKey;
      return { id: 10n };
    });
    expect(outcome).toMatchObject({ kind: "ok", value: { id: 10n } });
    // Tried with the result (refused: not JSON), then without it.
    expect(settles).toEqual([{ id: 10n }, undefined]);
    expect(inner.entry(key as string)).toMatchObject({ state: "succeeded" });
    expect(inner.entry(key as string)?.result).toBeUndefined();
  });

  // JSON.stringify refuses more than BigInts and cycles with a TypeError: nesting deeper than its
  // stack is a RangeError, and a result's own toJSON may throw anything. The key stayed pending
  // then, and the same logical call (another worker, a resumed job) was refused as a conflict
  // instead of being answered as done: the write's success was lost.
  const unwritable: [string, () => unknown][] = [
    [
      "nested deeper than JSON.stringify's stack",
      () => {
        let value: unknown = "leaf";
        for (let i = 0; i < 50_000; i++) value = [value];
        return value;
      },
    ],
    [
      "with a toJSON that throws",
      () => ({
        toJSON() {
          throw new Error("no JSON for /srv/app");
        },
      }),
    ],
  ];
  for (const [name, result] of unwritable) {
    it(`a success ${name} is settled without it; the same call later is replayed, not refused`, async () => {
      const store = createMemoryStore();
      const hostErrors: unknown[] = [];
      const policy = { tools: { w: { effect: "mutating" as const } } };
      const g = gov(policy, { store, onHostError: (e) => void hostErrors.push(e) });
      let runs = 0;
      const once = () => {
        const run = g.startRun({ idempotencyScope: "job-1" });
        return run.call({ tool: "w", callId: "c1" }, async () => {
          runs += 1;
          return result();
        });
      };
      expect(await once()).toMatchObject({ kind: "ok", replayed: false });
      expect(await once()).toMatchObject({ kind: "ok", replayed: true, value: undefined });
      expect(runs).toBe(1);
      expect(hostErrors).toEqual([]);
    });
  }
});

describe("hooks that throw never break the agent loop", () => {
  it("onEvent, onDecision, onRetry and onStop", async () => {
    const boom = () => {
      throw new Error("hook failed");
    };
    const g = gov(
      { tools: { t: { effect: "read_only", ...fast } } },
      { onEvent: boom, onDecision: boom, onRetry: boom, onStop: boom },
    );
    const run = g.startRun();
    let n = 0;
    const outcome = await run.call({ tool: "t" }, async () =>
      ++n < 2 ? text("503 Service Unavailable") : ok("done"),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(run.end().reason).toBe("completed");
  });

  it("async onEvent, onDecision, onRetry and onStop that reject leave no unhandled rejection", async () => {
    // An `async` hook (writing events to a database, say) is assignable to these void hooks;
    // its rejection, unhandled, would end a Node process run with the default settings.
    const seen: unknown[] = [];
    const onUnhandled = (e: unknown) => seen.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const calls: string[] = [];
      const boom = (name: string) => async () => {
        calls.push(name);
        throw new Error(`${name} failed`);
      };
      const g = gov(
        { tools: { t: { effect: "read_only", ...fast } } },
        {
          onEvent: boom("onEvent"),
          onDecision: boom("onDecision"),
          onRetry: boom("onRetry"),
          onStop: boom("onStop"),
        },
      );
      const run = g.startRun();
      let n = 0;
      const outcome = await run.call({ tool: "t" }, async () =>
        ++n < 2 ? text("503 Service Unavailable") : ok("done"),
      );
      expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
      expect(run.end().reason).toBe("completed");
      await new Promise((r) => setTimeout(r, 10));
      expect(new Set(calls)).toEqual(new Set(["onEvent", "onDecision", "onRetry", "onStop"]));
      expect(seen).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("onConfirm throwing is no approval; onHostError throwing is the default stop", async () => {
    const boom = () => {
      throw new Error("hook failed");
    };
    const g = gov(
      { tools: { pay: { access: "confirm" }, t: { effect: "read_only" } } },
      { onConfirm: boom, onHostError: boom },
    );
    expect(await g.startRun().call({ tool: "pay" }, async () => ok("paid"))).toMatchObject({
      kind: "stop",
      reason: "not_approved",
    });
    const err = Object.assign(new Error("Method not found"), { code: -32601 });
    expect(await g.startRun().call({ tool: "t" }, () => Promise.reject(err))).toMatchObject({
      kind: "stop",
      reason: "protocol_error",
    });
  });
});

describe("executors that ignore their signal", () => {
  it("an abort resolves the call at once", async () => {
    const ac = new AbortController();
    const run = gov({ tools: { t: { effect: "read_only" } } }).startRun({ signal: ac.signal });
    const pending = run.call({ tool: "t" }, () => new Promise(() => {}));
    setTimeout(() => ac.abort(), 10);
    expect(await pending).toMatchObject({ kind: "stop", reason: "aborted" });
  });

  it("the deadline resolves the call", async () => {
    const run = gov({ tools: { t: { effect: "read_only" } } }).startRun({
      deadline: Date.now() + 30,
    });
    expect((await run.call({ tool: "t" }, () => new Promise(() => {}))).kind).toBe("stop");
  });

  it("a deadline beyond Node's timer range works", async () => {
    expect(() => gov({ budgets: { wallTimeMs: 3_000_000_000 } })).toThrow(/wallTimeMs/);
    const run = gov({ tools: { t: { effect: "read_only" } } }).startRun({
      deadline: Date.now() + 3_000_000_000,
    });
    expect((await run.call({ tool: "t" }, async () => ok("x"))).kind).toBe("ok");
  });

  it("a signal read after the attempt ended is already aborted and holds nothing", async () => {
    const run = gov({ tools: { t: { effect: "read_only" } } }).startRun();
    let late: (() => AbortSignal) | undefined;
    await run.call({ tool: "t" }, async (ctx) => {
      late = () => ctx.signal;
      return ok("x");
    });
    expect(late?.().aborted).toBe(true);
  });
});

describe("the host's answers go through the same rules", () => {
  const invalid = () =>
    Promise.reject(Object.assign(new Error("Invalid params: id"), { code: -32602 }));

  it("correct_arguments counts toward repeats and has a real fingerprint", async () => {
    const run = gov(
      { tools: { t: { effect: "read_only" } } },
      { onHostError: () => ({ action: "correct_arguments" }) },
    ).startRun();
    const outcomes: CallOutcome<unknown>[] = [];
    for (let i = 0; i < 3; i++) outcomes.push(await run.call({ tool: "t", args: { i } }, invalid));
    expect(outcomes.map((o) => o.kind)).toEqual(["model", "model", "stop"]);
    expect(outcomes[0]?.kind === "model" && outcomes[0].fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it("retry is capped by the attempts and backed off", async () => {
    const run = gov(
      { tools: { t: { effect: "read_only", ...fast } } },
      { onHostError: () => ({ action: "retry" }) },
    ).startRun();
    let attempts = 0;
    const outcome = await run.call({ tool: "t" }, () => {
      attempts += 1;
      return invalid();
    });
    expect(attempts).toBe(3);
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
  });
});

describe("settling uncertain writes", () => {
  it("the stop names the key, and the host can settle it", async () => {
    const store = createMemoryStore();
    const events: GovernorEvent[] = [];
    const g = gov(
      { tools: { w: { effect: "mutating" } } },
      { store, onEvent: (e) => events.push(e) },
    );
    const outcome = await g.startRun().call({ tool: "w", callId: "c9" }, async () => {
      throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    });
    expect(outcome.kind).toBe("stop");
    const key = outcome.kind === "stop" ? outcome.idempotencyKey : undefined;
    expect(key).toMatch(/^gk_/);
    expect(events.find((e) => e.type === "decision")).toMatchObject({ idempotencyKey: key });
    await g.settle(key as string, "failed");
    // Settled as not written: the same logical call may run again.
    const again = await g.startRun().call({ tool: "w", callId: "c9" }, async () => ok("written"));
    expect(again.kind).toBe("ok");
  });
});

describe("observe-only", () => {
  it("sends calls untouched, asks nobody, and reports the stops it would have made", async () => {
    const events: GovernorEvent[] = [];
    let asked = 0;
    const g = gov(
      {
        observeOnly: true,
        budgets: { calls: 2 },
        tools: { pay: { access: "confirm", idempotency: { argument: "key" } } },
      },
      {
        onEvent: (e) => events.push(e),
        onConfirm: () => {
          asked += 1;
          return true;
        },
      },
    );
    const run = g.startRun();
    const seen: AttemptContext[] = [];
    for (let i = 0; i < 3; i++)
      await run.call({ tool: "pay", args: { amount: 5 } }, async (ctx) => {
        seen.push(ctx);
        return ok("paid");
      });
    expect(seen).toHaveLength(3);
    expect(seen[0]?.args).toEqual({ amount: 5 });
    expect(seen[0]?.meta).toEqual({});
    expect(asked).toBe(0);
    expect(
      events.filter((e) => e.type === "decision").map((e) => e.type === "decision" && e.reason),
    ).toContain("budget_exhausted");
  });
});

describe("the breaker", () => {
  it("lets exactly one parallel probe through after the cool-down", async () => {
    let now = 0;
    const g = gov(
      {
        tools: {
          t: {
            effect: "read_only",
            retry: { attempts: 1 },
            breaker: { threshold: 1, cooldownMs: 1_000 },
          },
        },
      },
      { now: () => now },
    );
    await g.startRun().call({ tool: "t" }, async () => text("503 Service Unavailable"));
    now = 1_500;
    let executed = 0;
    const outcomes = await Promise.all(
      [1, 2, 3, 4].map(() =>
        g.startRun().call({ tool: "t" }, async () => {
          executed += 1;
          return ok("back");
        }),
      ),
    );
    expect(executed).toBe(1);
    expect(outcomes.filter((o) => o.kind === "model" && o.reason === "circuit_open")).toHaveLength(
      3,
    );
  });
});

describe("after the second review", () => {
  const reset = () => Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });

  it("observe-only does not enforce the deadline", async () => {
    const run = gov({ observeOnly: true, budgets: { wallTimeMs: 20 } }).startRun();
    await new Promise((r) => setTimeout(r, 40));
    let executed = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      executed += 1;
      return ok("x");
    });
    expect(executed).toBe(1);
    expect(outcome.kind).toBe("ok");
  });

  it("an abort during the store's work is not missed", async () => {
    // The abort lands while the store is working (entered, not yet answered): no timing involved.
    const inner = createMemoryStore();
    let entered: () => void = () => {};
    const inStore = new Promise<void>((r) => (entered = r));
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const slow = {
      ...inner,
      increment: async (k: string, by: number, ttl: number) => {
        entered();
        await gate;
        return inner.increment(k, by, ttl);
      },
    };
    const ac = new AbortController();
    const run = gov({ tools: { t: { effect: "read_only" } } }, { store: slow }).startRun({
      signal: ac.signal,
    });
    let executed = 0;
    const pending = run.call({ tool: "t" }, () => {
      executed += 1;
      return new Promise(() => {});
    });
    await inStore;
    ac.abort();
    release();
    expect(await pending).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(executed).toBe(0);
  });

  it("a call waiting for approval does not run after a parallel call stopped the run", async () => {
    let approve: (v: boolean) => void = () => {};
    const g = gov(
      { tools: { pay: { access: "confirm" }, w: {} } },
      { onConfirm: () => new Promise<boolean>((r) => (approve = r)) },
    );
    const run = g.startRun();
    let paid = 0;
    const pay = run.call({ tool: "pay" }, async () => {
      paid += 1;
      return ok("paid");
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(await run.call({ tool: "w" }, () => Promise.reject(reset()))).toMatchObject({
      reason: "uncertain_mutation",
    });
    approve(true);
    expect((await pay).kind).toBe("stop");
    expect(paid).toBe(0);
  });

  it("a hook nobody answers does not hold the call past an abort", async () => {
    const ac = new AbortController();
    const g = gov(
      { tools: { pay: { access: "confirm" } } },
      { onConfirm: () => new Promise<boolean>(() => {}) },
    );
    const pending = g.startRun({ signal: ac.signal }).call({ tool: "pay" }, async () => ok("paid"));
    setTimeout(() => ac.abort(), 5);
    expect(await pending).toMatchObject({ kind: "stop", reason: "aborted" });
  });

  it("a keyed write whose retries all went unanswered stops naming its key, never switching", async () => {
    for (const alternatives of [[], ["pay_backup"]]) {
      const run = gov({
        tools: {
          pay: {
            effect: "mutating",
            alternatives,
            idempotency: { honorsKeys: true },
            retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
          },
        },
      }).startRun();
      const keys: (string | undefined)[] = [];
      const outcome = await run.call({ tool: "pay", args: { amount: 5 } }, (ctx) => {
        keys.push(ctx.idempotencyKey);
        return Promise.reject(reset());
      });
      // Both attempts may have written: the model is neither sent to another tool (a second
      // write under another key) nor told only that the service fails.
      expect(keys).toHaveLength(2);
      expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
      expect(outcome.kind === "stop" && outcome.idempotencyKey).toBe(keys[0]);
      expect(modelText(outcome)).toContain("the write may have happened");
    }
  });

  it("a keyed write left uncertain, then cut during its backoff, names its key and never says it was not made", async () => {
    for (const how of ["abort", "end", "call signal", "parallel stop"] as const) {
      const ac = new AbortController();
      const own = new AbortController();
      const run = gov(
        {
          tools: {
            pay: {
              effect: "mutating",
              idempotency: { honorsKeys: true },
              retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
            },
            read: { effect: "read_only" },
          },
        },
        { random: () => 0.99 },
      ).startRun({ signal: ac.signal });
      const keys: (string | undefined)[] = [];
      const pending = run.call(
        { tool: "pay", args: { amount: 5 }, ...(how === "call signal" && { signal: own.signal }) },
        (ctx) => {
          keys.push(ctx.idempotencyKey);
          return Promise.reject(reset());
        },
      );
      await new Promise((r) => setTimeout(r, 5));
      if (how === "abort") ac.abort();
      else if (how === "end") run.end();
      else if (how === "call signal") own.abort();
      else await run.call({ tool: "read" }, async () => text("403 Forbidden"));
      const outcome = await pending;
      // The first attempt may have written: the stop names its key, and its text does not say
      // the call was not made.
      expect(keys, how).toHaveLength(1);
      expect(outcome.kind, how).toBe("stop");
      expect(outcome.kind === "stop" && outcome.idempotencyKey, how).toBe(keys[0]);
      expect(modelText(outcome), how).not.toContain("not made");
    }
  });

  it("a retry's claim aborted before it is sent leaves the key uncertain, not failed", async () => {
    const ac = new AbortController();
    const inner = createMemoryStore();
    let claims = 0;
    // The host's store runs its own code during the claim: here it aborts the run.
    const store: Store = {
      ...inner,
      claim: (key, hash, options) => {
        const answer = inner.claim(key, hash, options);
        // The retry's claim of its key (the first attempt claimed its key and its content's).
        if (++claims === 3) ac.abort();
        return answer;
      },
      settle: (key, state, options) => inner.settle(key, state, options),
      entry: (key) => inner.entry(key),
      get: (key) => inner.get(key),
      set: (key, value, ttl) => inner.set(key, value, ttl),
      increment: (key, by, ttl) => inner.increment(key, by, ttl),
    };
    const run = gov(
      { tools: { pay: { effect: "mutating", idempotency: { honorsKeys: true }, ...fast } } },
      { store },
    ).startRun({ signal: ac.signal });
    let key: string | undefined;
    let sent = 0;
    const outcome = await run.call({ tool: "pay", args: { amount: 5 } }, (ctx) => {
      key = ctx.idempotencyKey;
      sent += 1;
      return Promise.reject(reset());
    });
    expect(sent).toBe(1);
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted", idempotencyKey: key });
    // The first attempt may have written: the ledger must not say it failed.
    expect((await inner.entry(key as string))?.state).toBe("uncertain");
  });

  it("a write cut in flight by the run's signal names its key", async () => {
    const ac = new AbortController();
    const run = gov({ tools: { pay: { effect: "mutating" } } }).startRun({ signal: ac.signal });
    let key: string | undefined;
    const pending = run.call({ tool: "pay", args: { amount: 5 } }, (ctx) => {
      key = ctx.idempotencyKey;
      return new Promise(() => {});
    });
    await new Promise((r) => setTimeout(r, 5));
    ac.abort();
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBe(key);
  });

  it("a keyed write whose first attempt went unanswered is not handed to another tool when a later attempt was never sent", async () => {
    const run = gov({
      tools: {
        pay: {
          effect: "mutating",
          alternatives: ["pay_backup"],
          idempotency: { honorsKeys: true },
          retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 },
        },
      },
    }).startRun();
    let n = 0;
    const outcome = await run.call({ tool: "pay", args: { amount: 5 } }, async () => {
      n += 1;
      // The first answer is lost (the write may have happened); the second attempt is refused
      // before it is sent.
      if (n === 1) throw reset();
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    });
    expect(n).toBe(2);
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toMatch(/^gk_/);
  });

  it("run.signal aborts when the run ends, its signal aborts or its deadline passes", async () => {
    const ended = gov().startRun();
    expect(ended.signal.aborted).toBe(false);
    ended.end();
    expect(ended.signal.aborted).toBe(true);
    const stopped = gov({ tools: { w: {} } }).startRun();
    const signal = stopped.signal;
    await stopped.call({ tool: "w" }, () => Promise.reject(reset()));
    expect(signal.aborted).toBe(true);
    const ac = new AbortController();
    const aborted = gov().startRun({ signal: ac.signal });
    ac.abort();
    expect(aborted.signal.aborted).toBe(true);
    // Long enough that a stalled machine (2 cores, load 10) still reads it before the deadline:
    // a signal read past the deadline is aborted at once.
    const late = gov({ budgets: { wallTimeMs: 300 } }).startRun();
    expect(late.signal.aborted).toBe(false);
    await new Promise((r) => setTimeout(r, 350));
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toMatchObject({ name: "TimeoutError" });
    // Observe-only enforces no deadline.
    const watched = gov({ observeOnly: true, budgets: { wallTimeMs: 1 } }).startRun();
    await new Promise((r) => setTimeout(r, 10));
    expect(watched.signal.aborted).toBe(false);
  });

  it("run.signal read after the deadline passed is aborted already", async () => {
    // An adapter checks `run.signal.aborted` before it starts a wait: past the deadline, it must
    // not start one (nor send a request) and learn only a timer tick later.
    const late = gov({ budgets: { wallTimeMs: 5 } }).startRun();
    await new Promise((r) => setTimeout(r, 20));
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toMatchObject({ name: "TimeoutError" });
  });

  it("a write left uncertain after the run ended still names its key", async () => {
    const run = gov({ tools: { w: {} } }).startRun();
    let fail: (e: Error) => void = () => {};
    const pending = run.call(
      { tool: "w", callId: "c1" },
      () => new Promise((_, reject) => (fail = reject)),
    );
    await new Promise((r) => setTimeout(r, 5));
    run.end();
    fail(reset());
    const outcome = await pending;
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toMatch(/^gk_/);
  });

  it("an empty server retry budget still switches when the failures budget allows one failure", async () => {
    const run = gov({
      budgets: { failures: 1 },
      retryBudget: { ratio: 0, reserve: 0 },
      tools: { t: { effect: "read_only", alternatives: ["t2"] } },
    }).startRun();
    expect(
      await run.call({ tool: "t" }, async () => text("503 Service Unavailable")),
    ).toMatchObject({
      kind: "model",
      action: "switch_tool",
    });
  });

  it("a call in backoff wakes when a parallel call stops the run", async () => {
    const run = gov({
      tools: {
        read: { effect: "read_only", retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } },
        w: {},
      },
    }).startRun();
    let settled = false;
    const read = run
      .call({ tool: "read" }, async () => text("503 Service Unavailable"))
      .finally(() => {
        settled = true;
      });
    await new Promise((r) => setTimeout(r, 5));
    await run.call({ tool: "w" }, () => Promise.reject(reset()));
    await new Promise((r) => setTimeout(r, 5));
    expect(settled).toBe(true);
    expect((await read).kind).toBe("stop");
  });

  it("an executor that aborts the run and throws at once leaves no unhandled rejection", async () => {
    const seen: unknown[] = [];
    const onUnhandled = (e: unknown) => seen.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const ac = new AbortController();
      const run = gov({ tools: { t: { effect: "read_only" } } }).startRun({ signal: ac.signal });
      let lateSignal: boolean | undefined;
      const outcome = await run.call({ tool: "t" }, (ctx) => {
        ac.abort();
        lateSignal = ctx.signal.aborted;
        throw new Error("stop");
      });
      await new Promise((r) => setTimeout(r, 10));
      expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
      expect(lateSignal).toBe(true);
      expect(seen).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("observe-only does not count the stops it would have made as failures", async () => {
    const run = gov({ observeOnly: true, budgets: { calls: 1 } }).startRun();
    for (let i = 0; i < 4; i++) await run.call({ tool: "t", args: { i } }, async () => ok("x"));
    expect(run.summary()).toMatchObject({ failures: 0, calls: 1 });
    expect(run.summary().lastFailure).toBeUndefined();
  });
});

describe("a store step that never answers holds no call past a cut (each step, sync judging or not)", () => {
  // The memory store with one method that never answers: the step waits on it (storeTimeoutMs is
  // far away), so only the cut can end the call.
  const hanging = (method: keyof Store): Store => {
    const base = createMemoryStore();
    return new Proxy(base, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key !== method || typeof value !== "function") return value;
        return () => new Promise(() => {});
      },
    });
  };
  const steps = [
    ["get", "a breaker read", "stop"],
    ["increment", "the retry budget's count", "stop"],
    ["claim", "the ledger claim", "stop"],
    ["settle", "the ledger settle of a success", "ok"],
    ["set", "the breaker write of a failure", "stop"],
  ] as const;
  for (const [method, what, kind] of steps) {
    for (const cut of ["run.end()", "the run's signal", "the call's signal"] as const) {
      it(`${what}, cut by ${cut}`, async () => {
        const ac = new AbortController();
        const g = gov(
          { tools: { pay: { idempotency: { honorsKeys: true } } } },
          { store: hanging(method), storeTimeoutMs: 600_000, onHostError: () => undefined },
        );
        const run = g.startRun(cut === "the run's signal" ? { signal: ac.signal } : {});
        let executed = 0;
        const pending = run.call(
          {
            tool: "pay",
            args: { n: 1 },
            ...(cut === "the call's signal" && { signal: ac.signal }),
          },
          async () => {
            executed += 1;
            if (method === "set") throw Object.assign(new Error("upstream 503"), { status: 503 });
            return ok("paid");
          },
        );
        setTimeout(() => (cut === "run.end()" ? run.end() : ac.abort(new Error("stop"))), 10);
        const outcome = await pending;
        expect(outcome.kind).toBe(kind);
        // A step before the attempt: nothing ran. A step after it: it ran once, never again.
        expect(executed).toBe(method === "settle" || method === "set" ? 1 : 0);
        if (kind === "stop") expect(outcome).toMatchObject({ reason: "aborted" });
        else expect(outcome).toMatchObject({ value: ok("paid"), attempts: 1 });
      });
    }
  }
});

describe("store keys", () => {
  it("a tool name a model invents does not grow the keys the run stores, and its breaker still opens", async () => {
    const inner = createMemoryStore();
    const lengths: number[] = [];
    const seen = (k: string) => {
      lengths.push(k.length);
      return k;
    };
    const store: Store = {
      get: (k) => inner.get(seen(k)),
      set: (k, v, t) => inner.set(seen(k), v, t),
      increment: (k, b, t) => inner.increment(seen(k), b, t),
      claim: (k, h, o) => inner.claim(seen(k), h, o),
      settle: (k, s, o) => inner.settle(seen(k), s, o),
      entry: (k) => inner.entry(seen(k)),
    };
    const g = gov(
      {
        tools: { "*": { effect: "read_only", breaker: { threshold: 2 }, retry: { attempts: 1 } } },
      },
      { store },
    );
    const tool = `x${"a".repeat(100_000)}`;
    const outcomes: CallOutcome<unknown>[] = [];
    for (let i = 0; i < 3; i++) {
      outcomes.push(
        await g.startRun().call({ tool, server: "s" }, async () => text("503 Service Unavailable")),
      );
    }
    expect(outcomes.at(-1)).toMatchObject({ kind: "model", reason: "circuit_open" });
    expect(lengths.length).toBeGreaterThan(0);
    expect(Math.max(...lengths)).toBeLessThan(400);
  });
});
