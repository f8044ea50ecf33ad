import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createAttemptGuard } from "./attempt-guard.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

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
    guard.enter(a);
    guard.started();
    guard.enter(b);
    guard.started();
    await Promise.resolve();
    expect(vi.getTimerCount()).toBe(1);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(1);
    guard.leave(a);
    expect(vi.getTimerCount()).toBe(1);
    guard.leave(b);
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
    guard.enter((reason, deadline) => cuts.push([reason, deadline]));
    guard.started();
    guard.enter((reason, deadline) => cuts.push([reason, deadline]));
    guard.started();
    await Promise.resolve();
    vi.advanceTimersByTime(99);
    expect(cuts).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(cuts).toHaveLength(2);
    expect(cuts.every(([r, d]) => d && (r as Error).name === "TimeoutError")).toBe(true);
  });

  it("arms no timer for an attempt that ends within a microtask of starting, one for any still running", async () => {
    const guard = createAttemptGuard({
      deadline: Date.now() + 1_000,
      now: Date.now,
      enforceDeadline: true,
    });
    const setTimer = vi.spyOn(globalThis, "setTimeout");
    const quick = vi.fn();
    guard.enter(quick);
    guard.started();
    guard.leave(quick);
    await Promise.resolve();
    expect(setTimer).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
    const slow = vi.fn();
    guard.enter(slow);
    guard.started();
    await Promise.resolve();
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
    guard.enter(cut);
    guard.started();
    await Promise.resolve();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(1_000);
    expect(cut).not.toHaveBeenCalled();
    ac.abort("stop");
    expect(cut).toHaveBeenCalledWith("stop", false);
    const other = vi.fn();
    guard.enter(other);
    guard.cutAll("ended");
    expect(other).toHaveBeenCalledWith("ended", false);
  });
});
