import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { createGovernor } from "./governor.ts";
import type { AttemptContext } from "./types.ts";

/**
 * The attempt's plumbing is shared: the handlers watching an executor's promise and standing for
 * the attempt in the run's guard are reused once that promise settled. A late answer of a cut
 * attempt, or a reused watch, must never reach another attempt. Real timers: the cuts are the point.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const gov = () =>
  createGovernor(
    { tools: { t: { effect: "read_only" } }, budgets: { calls: 1_000 } },
    { metrics: false, random: () => 0.5 },
  );

describe("the attempt's shared plumbing", () => {
  it("a cut attempt's late answer reaches no later attempt, and later attempts are cut on their own", async () => {
    const g = gov();
    // Run 1: an attempt cut by run.end() whose executor answers only afterwards.
    const first = g.startRun();
    let answerFirst: (value: unknown) => void = () => {};
    const cut = first.call({ tool: "t" }, () => new Promise((resolve) => (answerFirst = resolve)));
    setTimeout(() => first.end(), 5);
    expect(await cut).toMatchObject({ kind: "stop", reason: "aborted" });

    // Run 2: many quick calls (watches reused), then one left hanging.
    const second = g.startRun();
    for (let i = 0; i < 100; i++) {
      const outcome = await second.call({ tool: "t", args: { i } }, async () => ok(`r${i}`));
      expect(outcome).toMatchObject({ kind: "ok", value: ok(`r${i}`), attempts: 1 });
    }
    const told: unknown[] = [];
    const hanging = second.call({ tool: "t", args: { i: "hang" } }, (ctx: AttemptContext) => {
      ctx.onAbort((reason) => told.push(reason));
      return new Promise<never>(() => {});
    });
    // The first run's executor answers now: its attempt ended long ago, nothing else hears it.
    answerFirst(ok("late"));
    await new Promise((r) => setTimeout(r, 5));
    expect(told).toEqual([]);
    expect(second.ended).toBe(false);

    // Parallel calls, each with its own answer: none gets another's value.
    const values = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        second.call({ tool: "t", args: { p: i } }, async () => {
          await new Promise((r) => setTimeout(r, (i * 7) % 5));
          return ok(`p${i}`);
        }),
      ),
    );
    expect(values.map((o) => o.kind === "ok" && o.value)).toEqual(
      Array.from({ length: 20 }, (_, i) => ok(`p${i}`)),
    );

    // run.end() cuts the hanging attempt of this run, with its own listener.
    second.end();
    expect(await hanging).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(told).toHaveLength(1);
  });

  it("an executor that throws at once is judged after run.call returned, not inside it", async () => {
    let returned = false;
    let judgedBeforeReturn: boolean | undefined;
    const g = createGovernor(
      { tools: { t: { effect: "read_only", retry: { attempts: 1 } } } },
      {
        metrics: false,
        onEvent: (e) => {
          if (e.type === "decision") judgedBeforeReturn ??= !returned;
        },
      },
    );
    const pending = g.startRun().call({ tool: "t" }, () => {
      throw new Error("boom");
    });
    returned = true;
    expect((await pending).kind).not.toBe("ok");
    expect(judgedBeforeReturn).toBe(false);
  });

  it("reads the call's key, arguments and _meta through each attempt's context", async () => {
    const g = createGovernor(
      { tools: { pay: { idempotency: { honorsKeys: true, argument: "key" } } } },
      { metrics: false, random: () => 0.5 },
    );
    const seen: AttemptContext[] = [];
    const outcome = await g.startRun().call({ tool: "pay", args: { amount: 5 } }, async (ctx) => {
      seen.push(ctx);
      if (seen.length === 1)
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      return ok("paid");
    });
    expect(outcome.kind).toBe("ok");
    expect(seen.map((c) => c.attempt)).toEqual([1, 2]);
    const [a, b] = seen as [AttemptContext, AttemptContext];
    expect(a.idempotencyKey).toMatch(/^gk_/);
    expect(b.idempotencyKey).toBe(a.idempotencyKey);
    expect(a.args).toEqual({ amount: 5, key: a.idempotencyKey });
    expect(b.meta).toEqual({ "io.governor/idempotency-key": a.idempotencyKey });
    // Read after the attempt ended, the signal is already aborted.
    expect(a.signal.aborted).toBe(true);
  });
  it("hands the executor only the public AttemptContext: no way to reach the attempt's internals", async () => {
    /** Every property name reachable on `o`, its own and its prototypes' (Object's left out). */
    const reachable = (o: object) => {
      const names = new Set<string>();
      for (
        let p: object | null = o;
        p !== null && p !== Object.prototype;
        p = Object.getPrototypeOf(p)
      ) {
        for (const k of Reflect.ownKeys(p)) names.add(String(k));
      }
      return [...names].sort();
    };
    const contexts: AttemptContext[] = [];
    const run = gov().startRun();
    const answered = await run.call({ tool: "t", args: { n: 1 } }, async (ctx) => {
      contexts.push(ctx);
      // An executor that tries to answer for the attempt, or cut it, finds nothing to call.
      const inside = ctx as unknown as Record<string, unknown>;
      for (const name of ["answered", "cut", "resumeWith", "send", "thrown", "value"]) {
        expect(inside[name]).toBeUndefined();
      }
      return ok("real");
    });
    expect(answered).toMatchObject({ kind: "ok", value: ok("real") });
    const ctx = contexts[0] as AttemptContext;
    expect(reachable(ctx)).toEqual(
      [
        "args",
        "attempt",
        "beforeSending",
        "constructor",
        "idempotencyKey",
        "meta",
        "onAbort",
        "remainingMs",
        "signal",
      ].sort(),
    );
    // Nor through its class.
    expect(Reflect.ownKeys(ctx.constructor).map(String).sort()).toEqual([
      "length",
      "name",
      "prototype",
    ]);
  });

  it("a promise with a `then` of its own cannot answer twice, nor answer a later attempt through a reused watch", async () => {
    const g = gov();
    const run = g.startRun();
    // Its `then` calls the success handler twice at once: the call ends once, with the first.
    const twice = await run.call({ tool: "t", args: { n: 1 } }, () => {
      const p = Promise.resolve(ok("first"));
      // biome-ignore lint/suspicious/noThenProperty: the promise's own then is the attack
      Object.defineProperty(p, "then", {
        value: (onValue: (v: unknown) => void) => {
          onValue(ok("first"));
          onValue(ok("second"));
          return Promise.resolve();
        },
      });
      return p;
    });
    expect(twice).toMatchObject({ kind: "ok", value: ok("first"), attempts: 1 });

    // Its `then` keeps the handler and calls it later, when the watch watches another attempt.
    let later: ((v: unknown) => void) | undefined;
    const kept = await run.call({ tool: "t", args: { n: 2 } }, () => {
      const p = Promise.resolve(ok("kept"));
      // biome-ignore lint/suspicious/noThenProperty: the promise's own then is the attack
      Object.defineProperty(p, "then", {
        value: (onValue: (v: unknown) => void) => {
          later = onValue;
          onValue(ok("kept"));
          return Promise.resolve();
        },
      });
      return p;
    });
    expect(kept).toMatchObject({ kind: "ok", value: ok("kept") });
    const hanging = run.call({ tool: "t", args: { n: 3 } }, () => new Promise<never>(() => {}));
    later?.(ok("INJECTED"));
    await new Promise((r) => setTimeout(r, 5));
    run.end();
    expect(await hanging).toMatchObject({ kind: "stop", reason: "aborted" });
  });
  it("the pooled watches and the module's slots keep nothing of a run once it ended", async () => {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const g = createGovernor(
      { tools: { t: { effect: "read_only" }, w: { idempotency: { honorsKeys: true } } } },
      { metrics: false },
    );
    // The call's own signal outlives the run: it must not hold the run either.
    const own = new AbortController();
    const refs = await (async () => {
      const run = g.startRun();
      const result = ok("kept?");
      const execute = async () => result;
      let answer: (value: unknown) => void = () => {};
      await run.call({ tool: "t" }, execute);
      await run.call({ tool: "w", args: { a: 1 } }, async () => ok("written"));
      const cut = run.call({ tool: "t", args: { a: 2 } }, () => new Promise((r) => (answer = r)));
      const hanging = run.call(
        { tool: "t", args: { a: 3 }, signal: own.signal },
        () => new Promise<never>(() => {}),
      );
      await new Promise((r) => setTimeout(r, 5));
      run.end();
      await Promise.all([cut, hanging]);
      // The cut attempt's executor answers late: its watch goes back to the pool.
      answer(ok("late"));
      await new Promise((r) => setTimeout(r, 0));
      return [new WeakRef(run), new WeakRef(result), new WeakRef(execute)];
    })();
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 0));
      gc();
    }
    expect(refs.map((r) => r.deref() === undefined)).toEqual([true, true, true]);
    expect(own.signal.aborted).toBe(false);
  });
});
