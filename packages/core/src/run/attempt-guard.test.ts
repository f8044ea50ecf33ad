import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createAttemptGuard, guardsAwaitingCheck, type LiveAttempt } from "./attempt-guard.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Resolves once the ticks queued before it have run (the guard's check is one). */
const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

/** The guard holds attempts by their `cut`: one object per cut function, the same each time. */
const lives = new Map<LiveAttempt["cut"], LiveAttempt>();
function live(cut: LiveAttempt["cut"], readOnly = false): LiveAttempt {
  let attempt = lives.get(cut);
  if (attempt === undefined) {
    attempt = { cut, readOnly };
    lives.set(cut, attempt);
  }
  return attempt;
}

describe("createAttemptGuard", () => {
  it("holds one timer and one listener for all attempts in flight, none when idle", async () => {
    const ac = new AbortController();
    const guard = createAttemptGuard({
      deadline: Date.now() + 1_000,
      now: Date.now,
      enforceDeadline: true,
      signal: ac.signal,
    });
    const a = vi.fn();
    const b = vi.fn();
    guard.enter(live(a));
    guard.started();
    guard.enter(live(b));
    guard.started();
    await nextTick();
    expect(vi.getTimerCount()).toBe(1);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(1);
    guard.leave(live(a));
    expect(vi.getTimerCount()).toBe(1);
    guard.leave(live(b));
    expect(guard.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
  });

  it("cuts every attempt in flight at the deadline, with a TimeoutError", async () => {
    const guard = createAttemptGuard({
      deadline: Date.now() + 100,
      now: Date.now,
      enforceDeadline: true,
    });
    const cuts: [unknown, boolean][] = [];
    guard.enter(live((reason, deadline) => cuts.push([reason, deadline])));
    guard.started();
    guard.enter(live((reason, deadline) => cuts.push([reason, deadline])));
    guard.started();
    await nextTick();
    vi.advanceTimersByTime(99);
    expect(cuts).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(cuts).toHaveLength(2);
    expect(cuts.every(([r, d]) => d && (r as Error).name === "TimeoutError")).toBe(true);
  });

  it("arms no timer for an attempt that ends before the next tick, one for any still running", async () => {
    const guard = createAttemptGuard({
      deadline: Date.now() + 1_000,
      now: Date.now,
      enforceDeadline: true,
    });
    const setTimer = vi.spyOn(globalThis, "setTimeout");
    const quick = vi.fn();
    guard.enter(live(quick));
    guard.started();
    guard.leave(live(quick));
    await nextTick();
    expect(setTimer).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
    const slow = vi.fn();
    guard.enter(live(slow));
    guard.started();
    await nextTick();
    expect(setTimer).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(1);
    setTimer.mockRestore();
    vi.advanceTimersByTime(1_000);
    expect(slow).toHaveBeenCalledWith(expect.objectContaining({ name: "TimeoutError" }), true);
  });

  it("cuts on the run's signal with its reason, and on cutAll; never past the deadline when observing", async () => {
    const ac = new AbortController();
    const guard = createAttemptGuard({
      deadline: Date.now() + 10,
      now: Date.now,
      enforceDeadline: false,
      signal: ac.signal,
    });
    const cut = vi.fn();
    guard.enter(live(cut));
    guard.started();
    await nextTick();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(cut).not.toHaveBeenCalled();
    ac.abort("stop");
    expect(cut).toHaveBeenCalledWith("stop", false);
    const other = vi.fn();
    guard.enter(live(other));
    guard.cutAll("ended");
    expect(other).toHaveBeenCalledWith("ended", false);
  });

  it("cuts only the attempts of tools that cannot write on cutReads", () => {
    const guard = createAttemptGuard({
      deadline: Date.now() + 1_000,
      now: Date.now,
      enforceDeadline: true,
    });
    const read = vi.fn();
    const write = vi.fn();
    guard.enter(live(read, true));
    guard.enter(live(write, false));
    guard.cutReads("stopped");
    expect(read).toHaveBeenCalledWith("stopped", false);
    expect(write).not.toHaveBeenCalled();
  });
});

describe("the guard's check", () => {
  it("is queued once for attempts that start and end within one run of microtasks, not per attempt", async () => {
    const guard = createAttemptGuard({
      deadline: Date.now() + 1_000,
      now: Date.now,
      enforceDeadline: true,
    });
    const ticks = vi.spyOn(process, "nextTick");
    for (let i = 0; i < 100; i++) {
      const quick = vi.fn();
      guard.enter(live(quick));
      guard.started();
      await Promise.resolve();
      guard.leave(live(quick));
    }
    expect(ticks).toHaveBeenCalledTimes(1);
    ticks.mockRestore();
    // An attempt still in flight when the check runs gets the timer, though it entered after
    // the check was queued.
    const slow = vi.fn();
    guard.enter(live(slow));
    guard.started();
    await nextTick();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(slow).toHaveBeenCalledWith(expect.objectContaining({ name: "TimeoutError" }), true);
    expect(guard.size).toBe(1);
    guard.leave(live(slow));
    expect(vi.getTimerCount()).toBe(0);
  });

  it("is one tick for every run's guard, and holds no guard whose attempts all left", async () => {
    // A loop of runs whose calls answer at once never lets a tick run while it goes on: a tick
    // per run held each run's guard until the loop ended (1M runs held 0.5 GB, memory_1m_runs).
    const ticks = vi.spyOn(process, "nextTick");
    for (let i = 0; i < 1_000; i++) {
      const guard = createAttemptGuard({
        deadline: Date.now() + 1_000,
        now: Date.now,
        enforceDeadline: true,
      });
      const quick = vi.fn();
      guard.enter(live(quick));
      guard.started();
      expect(guardsAwaitingCheck()).toBe(1);
      await Promise.resolve();
      guard.leave(live(quick));
      expect(guardsAwaitingCheck()).toBe(0);
    }
    expect(ticks).toHaveBeenCalledTimes(1);
    ticks.mockRestore();
    await nextTick();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("is queued again for an attempt that starts after the check ran", async () => {
    const guard = createAttemptGuard({
      deadline: Date.now() + 500,
      now: Date.now,
      enforceDeadline: true,
    });
    const quick = vi.fn();
    guard.enter(live(quick));
    guard.started();
    guard.leave(live(quick));
    await nextTick();
    expect(vi.getTimerCount()).toBe(0);
    const slow = vi.fn();
    guard.enter(live(slow));
    guard.started();
    await nextTick();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(500);
    expect(slow).toHaveBeenCalledTimes(1);
  });
});

describe("the guard's watch", () => {
  /** A promise and what settles it. */
  function pending(): {
    promise: Promise<unknown>;
    resolve: (value: unknown) => void;
    reject: (error: unknown) => void;
  } {
    let resolve: (value: unknown) => void = () => {};
    let reject: (error: unknown) => void = () => {};
    const promise = new Promise<unknown>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  /** An attempt that records what reached it. */
  function attempt(): {
    answers: [boolean, unknown][];
    answered(thrown: boolean, value: unknown): void;
  } {
    const answers: [boolean, unknown][] = [];
    return { answers, answered: (thrown, value) => answers.push([thrown, value]) };
  }

  /** The reactions of promises settled now have run (microtasks only: the timers are fake). */
  async function settledReactions(): Promise<void> {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  }

  const guard = () =>
    createAttemptGuard({ deadline: Date.now() + 1_000, now: Date.now, enforceDeadline: true });

  it("hands each promise's answer to its own attempt, one watched at a time or several", async () => {
    const g = guard();
    const [a, b, c] = [attempt(), attempt(), attempt()];
    const [pa, pb, pc] = [pending(), pending(), pending()];
    g.watch(a, pa.promise);
    g.watch(b, pb.promise);
    g.watch(c, pc.promise);
    pc.resolve("c");
    pa.reject("a failed");
    pb.resolve("b");
    await settledReactions();
    expect(a.answers).toEqual([[true, "a failed"]]);
    expect(b.answers).toEqual([[false, "b"]]);
    expect(c.answers).toEqual([[false, "c"]]);
  });

  it("never hands a late answer (an attempt cut before its executor answered) to a later attempt", async () => {
    const g = guard();
    const cut = attempt();
    const late = pending();
    g.watch(cut, late.promise);
    // The first attempt was cut and left; its executor's promise is still pending.
    const next = attempt();
    const answer = pending();
    g.watch(next, answer.promise);
    late.resolve("the cut attempt's late answer");
    answer.resolve("the next attempt's answer");
    await settledReactions();
    expect(next.answers).toEqual([[false, "the next attempt's answer"]]);
    expect(cut.answers).toEqual([[false, "the cut attempt's late answer"]]);
    // Once the late answer came, the guard watches again with its own handlers.
    const third = attempt();
    const p = pending();
    g.watch(third, p.promise);
    p.resolve(3);
    await settledReactions();
    expect(third.answers).toEqual([[false, 3]]);
    expect(next.answers).toHaveLength(1);
  });
});
