import { afterEach, describe, expect, it, vi } from "vitest";
import { createGovernor } from "./governor.ts";
import type { AttemptContext, Executor } from "./types.ts";

/**
 * The run's deadline timer is armed on the tick after an attempt started (attempt-guard.ts), not
 * at once: these check, with real timers (timing is the point), that no cut is lost for an
 * attempt started from any phase of the event loop, nor after calls that answered at once shared
 * the check, and that no timer is left when nothing is in flight.
 */

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const gov = () =>
  createGovernor(
    {
      tools: { t: { effect: "read_only" }, w: { effect: "mutating" } },
      budgets: { calls: 100_000 },
    },
    { metrics: false, random: () => 0.5 },
  );

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * Counts the timers set from now on and not cleared since (the real ones: the spies call
 * through). Not the process's count of timers: the test runner's own come and go meanwhile.
 */
function trackTimers(): () => number {
  const set = vi.spyOn(globalThis, "setTimeout");
  const cleared = vi.spyOn(globalThis, "clearTimeout");
  return () => {
    const gone = new Set(cleared.mock.calls.map(([handle]) => handle));
    return set.mock.results.filter((r) => !gone.has(r.value)).length;
  };
}

/** Never answers by itself; records the reason its attempt was cut with. */
function hanging(told: unknown[]): Executor<never> {
  return (ctx: AttemptContext) => {
    ctx.onAbort((reason) => told.push(reason));
    return new Promise<never>(() => {});
  };
}

/** Runs `start` from inside one phase of the event loop, and hands back what it returned. */
const phases: Record<string, <T>(start: () => T) => Promise<T>> = {
  "a timer callback": (start) => new Promise((resolve) => setTimeout(() => resolve(start()), 1)),
  "an immediate": (start) => new Promise((resolve) => setImmediate(() => resolve(start()))),
  "an I/O callback": (start) =>
    import("node:fs").then(
      ({ stat }) => new Promise((resolve) => stat(".", () => resolve(start()))),
    ),
  "a tick": (start) => new Promise((resolve) => process.nextTick(() => resolve(start()))),
  "a microtask": (start) => Promise.resolve().then(start),
};

describe("the deadline timer, armed on the tick after an attempt starts", () => {
  for (const [phase, within] of Object.entries(phases)) {
    it(`cuts a call that never answers, started from ${phase}, at the run's deadline`, async () => {
      const governor = gov();
      const told: unknown[] = [];
      // The run starts in the same callback as its call: the deadline is still ahead when it is
      // sent (250 ms: a loaded machine can stall a process for tens of ms between two lines).
      const { run, pending } = await within(() => {
        const run = governor.startRun({ deadline: Date.now() + 250 });
        return { run, pending: run.call({ tool: "t" }, hanging(told)) };
      });
      expect(await pending).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
      expect(told).toHaveLength(1);
      expect(told[0]).toMatchObject({ name: "TimeoutError" });
      run.end();
    });
  }

  it("a call that never answers, after 1,000 that answered at once in one chain of microtasks, is cut", async () => {
    // The governor's clock stands still until the last call is sent: however long the 1,000
    // calls take on a loaded machine, none of them (nor the last one's admission) sees the
    // deadline pass. From the last call's sending on it runs: only the timer, armed with the
    // 500 ms the clock then says are left, can cut that call.
    const at = Date.now();
    let since: number | undefined;
    const governor = createGovernor(
      { tools: { t: { effect: "read_only" } }, budgets: { calls: 100_000 } },
      {
        metrics: false,
        random: () => 0.5,
        now: () => (since === undefined ? at : at + (Date.now() - since)),
      },
    );
    const run = governor.startRun({ deadline: at + 500 });
    for (let i = 0; i < 1_000; i++) {
      expect((await run.call({ tool: "t", args: { i } }, async () => ok("x"))).kind).toBe("ok");
    }
    // Still in the chain the first call's check was queued from: the check has not run yet.
    const told: unknown[] = [];
    const hang = hanging(told);
    const outcome = await run.call({ tool: "t", args: { i: -1 } }, (ctx) => {
      since = Date.now();
      return hang(ctx);
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "deadline_exceeded" });
    expect(told).toHaveLength(1);
    run.end();
  });

  it("a write cut at the deadline is uncertain, and its late answer is never reported as a success", async () => {
    const run = gov().startRun({ deadline: Date.now() + 250 });
    let answer: ((value: unknown) => void) | undefined;
    let sent = 0;
    const outcome = await run.call({ tool: "w", args: { amount: 1 } }, () => {
      sent += 1;
      return new Promise((resolve) => {
        answer = resolve;
      });
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    answer?.(ok("paid"));
    await new Promise((r) => setTimeout(r, 5));
    expect(sent).toBe(1);
    const summary = run.end();
    expect(summary.failures).toBe(1);
    expect(summary.attempts).toBe(1);
  });

  it("holds no timer while nothing is in flight: after calls that answered at once, and after a cut", async () => {
    const timers = trackTimers();
    const run = gov().startRun({ deadline: Date.now() + 60_000 });
    for (let i = 0; i < 50; i++) await run.call({ tool: "t", args: { i } }, async () => ok("x"));
    await new Promise<void>((r) => setImmediate(r));
    expect(timers()).toBe(0);

    // One still running on the next tick holds the run's timer; none once it has answered.
    let answer: ((value: unknown) => void) | undefined;
    const pending = run.call(
      { tool: "t", args: { slow: true } },
      () => new Promise((resolve) => (answer = resolve)),
    );
    await new Promise<void>((r) => setImmediate(r));
    expect(timers()).toBe(1);
    answer?.(ok("late but in time"));
    expect((await pending).kind).toBe("ok");
    expect(timers()).toBe(0);

    const ended = gov().startRun();
    const cut = ended.call({ tool: "t" }, hanging([]));
    await new Promise<void>((r) => setImmediate(r));
    expect(timers()).toBe(1);
    ended.end();
    expect((await cut).kind).toBe("stop");
    expect(timers()).toBe(0);
    run.end();
  });
});
