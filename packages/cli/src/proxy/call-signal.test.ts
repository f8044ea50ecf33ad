import { createGovernor } from "@governor/core";
import { PlainAbortSignal as CallSignal } from "@governor/mcp";
import { describe, expect, it } from "vitest";

describe("CallSignal", () => {
  it("aborts once, with the reason given or an AbortError, calling onabort then each listener once in order", () => {
    const signal = new CallSignal();
    const seen: string[] = [];
    const first = (event: { type: string; target: unknown }) => {
      seen.push(`first ${event.type} ${event.target === signal}`);
    };
    signal.onabort = () => seen.push("onabort");
    signal.addEventListener("abort", first, { once: true });
    signal.addEventListener("abort", first);
    signal.addEventListener("abort", { handleEvent: () => seen.push("object") });
    signal.addEventListener("other", () => seen.push("other"));
    const removed = () => seen.push("removed");
    signal.addEventListener("abort", removed);
    signal.removeEventListener("abort", removed);
    expect(signal.aborted).toBe(false);
    expect(() => signal.throwIfAborted()).not.toThrow();
    signal.abort("host cancelled");
    signal.abort("again");
    expect(seen).toEqual(["onabort", "first abort true", "object"]);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe("host cancelled");
    expect(() => signal.throwIfAborted()).toThrow("host cancelled");
    const plain = new CallSignal();
    plain.abort();
    expect(plain.reason).toMatchObject({ name: "AbortError" });
  });

  it("goes on past a listener that throws, as an EventTarget does", async () => {
    const signal = new CallSignal();
    const seen: string[] = [];
    signal.addEventListener("abort", () => {
      throw new Error("listener broke");
    });
    signal.addEventListener("abort", () => seen.push("second"));
    const thrown = new Promise<unknown>((resolve) => {
      const previous = process.listeners("uncaughtException");
      process.removeAllListeners("uncaughtException");
      process.once("uncaughtException", (error) => {
        for (const listener of previous) process.on("uncaughtException", listener);
        resolve(error);
      });
    });
    signal.abort();
    expect(seen).toEqual(["second"]);
    expect(await thrown).toMatchObject({ message: "listener broke" });
  });

  it("cuts a governed call as an AbortController's signal does: the attempt in flight, and the run", async () => {
    const seen: Record<string, unknown> = {};
    for (const kind of ["CallSignal", "AbortController"] as const) {
      const governor = createGovernor({ budgets: { calls: 10 } }, { metrics: false });
      const run = governor.startRun();
      const controller = new AbortController();
      const own = new CallSignal();
      const signal = kind === "CallSignal" ? own.asSignal() : controller.signal;
      let cut: unknown;
      const outcome = run.call({ tool: "t", args: { a: 1 }, signal }, (ctx) => {
        ctx.onAbort((reason) => {
          cut = reason;
        });
        return new Promise(() => undefined);
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const reason = new Error("the host cancelled");
      if (kind === "CallSignal") own.abort(reason);
      else controller.abort(reason);
      const result = await outcome;
      seen[kind] = {
        outcome: result.kind,
        reason: result.kind === "stop" ? result.reason : undefined,
        cut: cut === reason,
        ended: run.ended,
        runReason: run.summary().reason,
      };
    }
    expect(seen.CallSignal).toEqual(seen.AbortController);
    expect(seen.CallSignal).toMatchObject({
      outcome: "stop",
      reason: "aborted",
      cut: true,
      ended: true,
    });
  });
});
