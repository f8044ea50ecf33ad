import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { BoundError, within } from "./bound.ts";

const never = () => new Promise<never>(() => undefined);

describe("within", () => {
  it("settles as the promise does, and leaves no listener on the signal", async () => {
    const controller = new AbortController();
    await expect(within(Promise.resolve(3), 1000, controller.signal)).resolves.toBe(3);
    await expect(within(Promise.reject(new Error("no")), 1000, controller.signal)).rejects.toThrow(
      "no",
    );
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("rejects with a BoundError once the time is up", async () => {
    const error = await within(never(), 20).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BoundError);
    expect(error).toMatchObject({ why: "timeout", message: "did not finish within 20 ms" });
  });

  it("rejects at once when the signal aborts (or was aborted), with the signal's BoundError reason when it has one", async () => {
    const controller = new AbortController();
    const pending = within(never(), 60_000, controller.signal).catch((e: unknown) => e);
    controller.abort();
    expect(await pending).toMatchObject({ why: "aborted" });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);

    const reason = new BoundError("timeout", "did not finish within 5 ms");
    const aborted = await within(never(), 60_000, AbortSignal.abort(reason)).catch(
      (e: unknown) => e,
    );
    expect(aborted).toBe(reason);
  });
});
