import { describe, expect, it, vi } from "vitest";
import { PlainAbortSignal } from "./plain-signal.ts";

describe("PlainAbortSignal", () => {
  it("aborts once with the reason: listeners and onabort called in order, each once", () => {
    const signal = new PlainAbortSignal();
    const calls: string[] = [];
    signal.onabort = () => calls.push("onabort");
    const first = vi.fn(() => calls.push("first"));
    signal.addEventListener("abort", first);
    signal.addEventListener("abort", first); // the same listener twice is one listener
    signal.addEventListener("abort", () => calls.push("second"), { once: true });
    const reason = new Error("cut");
    signal.abort(reason);
    signal.abort(new Error("again"));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(calls).toEqual(["onabort", "first", "second"]);
    expect(first).toHaveBeenCalledWith(expect.objectContaining({ type: "abort" }));
  });

  it("throwIfAborted throws the reason once aborted, not before; no reason is an AbortError", () => {
    const signal = new PlainAbortSignal();
    expect(() => signal.throwIfAborted()).not.toThrow();
    signal.abort();
    expect(() => signal.throwIfAborted()).toThrow(expect.objectContaining({ name: "AbortError" }));
  });

  it("a removed listener is not called; one added after the abort is not either", () => {
    const signal = new PlainAbortSignal();
    const removed = vi.fn();
    signal.addEventListener("abort", removed);
    signal.removeEventListener("abort", removed);
    signal.addEventListener("other", removed);
    signal.abort("why");
    const late = vi.fn();
    signal.addEventListener("abort", late);
    expect(removed).not.toHaveBeenCalled();
    expect(late).not.toHaveBeenCalled();
  });

  it("a listener that throws does not keep the others from running (its error is rethrown later, as EventTarget does)", async () => {
    const signal = new PlainAbortSignal();
    const after = vi.fn();
    signal.addEventListener("abort", () => {
      throw new Error("listener broke");
    });
    signal.addEventListener("abort", after);
    const uncaught = new Promise<unknown>((resolve) => {
      const listeners = process.listeners("uncaughtException");
      process.removeAllListeners("uncaughtException");
      process.once("uncaughtException", (error) => {
        for (const l of listeners) process.on("uncaughtException", l);
        resolve(error);
      });
    });
    signal.abort("why");
    expect(after).toHaveBeenCalledTimes(1);
    await expect(uncaught).resolves.toMatchObject({ message: "listener broke" });
  });
});
