import { describe, expect, it } from "vitest";
import type { PolicyInput } from "../policy/policy.ts";
import { createGovernor } from "./governor.ts";
import type { AttemptContext } from "./types.ts";

/**
 * `ctx.onAbort`: the attempt's cut told to a listener, with no AbortSignal made. Real timers: the
 * deadline and the aborts are the point.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const readOnly: PolicyInput = { tools: { t: { effect: "read_only" } } };
const gov = (policy: PolicyInput = readOnly) =>
  createGovernor(policy, { metrics: false, random: () => 0.5 });

/** An executor that never settles by itself and records what its listener is told. */
function hanging(told: unknown[]) {
  return (ctx: AttemptContext) => {
    ctx.onAbort((reason) => told.push(reason));
    return new Promise<never>(() => {});
  };
}

describe("ctx.onAbort", () => {
  it("the run's signal mid-attempt: the listener gets its reason, once, and the call ends aborted", async () => {
    const ac = new AbortController();
    const run = gov().startRun({ signal: ac.signal });
    const told: unknown[] = [];
    const pending = run.call({ tool: "t" }, hanging(told));
    const reason = new Error("host gave up");
    setTimeout(() => ac.abort(reason), 10);
    expect(await pending).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(told).toEqual([reason]);
  });

  it("the run's deadline mid-attempt: the listener gets a TimeoutError", async () => {
    const run = gov().startRun({ deadline: Date.now() + 250 });
    const told: unknown[] = [];
    const outcome = await run.call({ tool: "t" }, hanging(told));
    expect(outcome.kind).toBe("stop");
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ name: "TimeoutError" });
  });

  it("the host's run.end() and the call's own signal mid-attempt reach the listener", async () => {
    const ended = gov().startRun();
    const toldEnd: unknown[] = [];
    const pendingEnd = ended.call({ tool: "t" }, hanging(toldEnd));
    setTimeout(() => ended.end(), 10);
    expect((await pendingEnd).kind).toBe("stop");
    expect(toldEnd).toHaveLength(1);

    const own = new AbortController();
    const toldOwn: unknown[] = [];
    const run = gov().startRun();
    const pendingOwn = run.call({ tool: "t", signal: own.signal }, hanging(toldOwn));
    const reason = new Error("call cancelled");
    setTimeout(() => own.abort(reason), 10);
    expect(await pendingOwn).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(toldOwn).toEqual([reason]);
  });

  it("a listener of an attempt that ended is never called: not by a later abort, end or deadline", async () => {
    const ac = new AbortController();
    // The deadline passes after the three calls (quick, even on a loaded machine), before the check.
    const deadline = Date.now() + 400;
    const run = gov().startRun({ signal: ac.signal, deadline });
    const told: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await run.call({ tool: "t", args: { i } }, async (ctx) => {
        ctx.onAbort((reason) => told.push(reason));
        return ok("x");
      });
      expect(outcome.kind).toBe("ok");
    }
    await new Promise((r) => setTimeout(r, deadline - Date.now() + 20));
    ac.abort();
    run.end();
    expect(told).toEqual([]);
  });

  it("a listener added after the cut, or after the attempt ended, is called at once", async () => {
    const ac = new AbortController();
    const run = gov().startRun({ signal: ac.signal });
    const reason = new Error("cut");
    let afterCut: unknown[] = [];
    let late: AttemptContext | undefined;
    const outcome = await run.call({ tool: "t" }, (ctx) => {
      late = ctx;
      ac.abort(reason);
      const told: unknown[] = [];
      ctx.onAbort((r) => told.push(r));
      afterCut = told;
      return new Promise<never>(() => {});
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(afterCut).toEqual([reason]);

    const fresh = gov().startRun();
    await fresh.call({ tool: "t" }, async (ctx) => {
      late = ctx;
      return ok("x");
    });
    const afterEnd: unknown[] = [];
    late?.onAbort((r) => afterEnd.push(r));
    expect(afterEnd).toHaveLength(1);
    expect(afterEnd[0]).toMatchObject({ name: "AbortError" });
  });

  it("a listener that throws does not keep the attempt from ending, nor the next listener from running", async () => {
    const ac = new AbortController();
    const run = gov().startRun({ signal: ac.signal });
    const told: unknown[] = [];
    const pending = run.call({ tool: "t" }, (ctx) => {
      ctx.onAbort(() => {
        throw new Error("listener broke");
      });
      ctx.onAbort((r) => told.push(r));
      return new Promise<never>(() => {});
    });
    setTimeout(() => ac.abort("why"), 10);
    expect(await pending).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(told).toEqual(["why"]);
  });

  it("reading neither signal nor onAbort costs no AbortController; onAbort alone makes none either", async () => {
    const made: number[] = [];
    const Original = globalThis.AbortController;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made.push(1);
      }
    };
    try {
      const run = gov().startRun();
      await run.call({ tool: "t" }, async () => ok("x"));
      await run.call({ tool: "t", args: { n: 2 } }, async (ctx) => {
        ctx.onAbort(() => {});
        return ok("x");
      });
      expect(made).toHaveLength(0);
      await run.call({ tool: "t", args: { n: 3 } }, async (ctx) => {
        expect(ctx.signal.aborted).toBe(false);
        return ok("x");
      });
      expect(made).toHaveLength(1);
    } finally {
      globalThis.AbortController = Original;
    }
  });
});
