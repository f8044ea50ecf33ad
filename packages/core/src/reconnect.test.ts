import { afterEach, describe, expect, it, vi } from "vitest";
import { GovernorError } from "./errors.ts";
import { createReconnector, ReconnectFailed } from "./reconnect.ts";

const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error));

afterEach(() => {
  vi.useRealTimers();
});

describe("createReconnector", () => {
  it("runs one reconnect for every call that found the server gone at the same time", async () => {
    let calls = 0;
    let finish: () => void = () => {};
    const r = createReconnector(
      () => {
        calls += 1;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      { limitMs: 1_000, describe: describeError },
    );
    const seen = r.generation;
    const waiting = [r.renew(seen, undefined), r.renew(seen, undefined), r.renew(seen, undefined)];
    await Promise.resolve();
    await Promise.resolve();
    finish();
    await Promise.all(waiting);
    expect(calls).toBe(1);
    expect(r.generation).toBe(seen + 1);
  });

  it("a call that failed on a connection already replaced sends again without replacing the new one", async () => {
    let calls = 0;
    const r = createReconnector(
      async () => {
        calls += 1;
      },
      { limitMs: 1_000, describe: describeError },
    );
    const before = r.generation;
    await r.renew(before, undefined);
    // A second call saw the old generation, and its failure came after the reconnect.
    await r.renew(before, undefined);
    expect(calls).toBe(1);
    await r.renew(r.generation, undefined);
    expect(calls).toBe(2);
  });

  it("a hook that throws (at once or later) fails the call as ReconnectFailed with its redacted text, and the next call tries again", async () => {
    let calls = 0;
    const r = createReconnector(
      (() => {
        calls += 1;
        if (calls === 1) throw new Error("spawn ENOENT");
        return Promise.reject(new Error("refused"));
      }) as () => Promise<void>,
      { limitMs: 1_000, describe: (error) => `[${describeError(error)}]` },
    );
    const first = await r.renew(0, undefined).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ReconnectFailed);
    expect((first as ReconnectFailed).message).toBe("Reconnect failed: [spawn ENOENT]");
    expect((first as ReconnectFailed).failure()).toMatchObject({
      channel: "local",
      local: "not_connected",
      text: "Reconnect failed: [spawn ENOENT]",
    });
    const second = await r.renew(0, undefined).catch((e: unknown) => e);
    expect((second as Error).message).toBe("Reconnect failed: [refused]");
    expect(calls).toBe(2);
    expect(r.generation).toBe(0);
  });

  it("a waiting call gives up at the reconnect's time limit and at its own signal; the hook's signal aborts at the limit", async () => {
    vi.useFakeTimers();
    let hookSignal: AbortSignal | undefined;
    const r = createReconnector(
      (signal) => {
        hookSignal = signal;
        return new Promise<void>(() => {});
      },
      { limitMs: 5_000, describe: describeError },
    );
    const controller = new AbortController();
    const own = r.renew(0, controller.signal).catch((e: unknown) => e);
    const timed = r.renew(0, undefined).catch((e: unknown) => e);
    controller.abort();
    expect(((await own) as Error).message).toBe("Aborted while reconnecting");
    await vi.advanceTimersByTimeAsync(5_000);
    expect(((await timed) as Error).message).toBe("Reconnect did not finish within 5000 ms");
    expect(hookSignal?.aborted).toBe(true);
    const already = await r.renew(0, AbortSignal.abort()).catch((e: unknown) => e);
    expect(already).toBeInstanceOf(ReconnectFailed);
  });

  it("by default the host reads what the hook threw redacted: no path or secret of a spawn", async () => {
    const r = createReconnector(
      async () => {
        throw new Error(
          "spawn /opt/acme/bin/notes-server --token sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0 ENOENT",
        );
      },
      { limitMs: 1_000 },
    );
    const failed = (await r.renew(0, undefined).catch((e: unknown) => e)) as ReconnectFailed;
    expect(failed).toBeInstanceOf(ReconnectFailed);
    expect(failed.message).toMatch(/^Reconnect failed: /);
    expect(failed.message).not.toContain("/opt/acme");
    expect(failed.message).not.toContain("sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0");
    // The raw error stays with the host, as the failure's raw value.
    expect((failed.failure().raw as Error).message).toContain("/opt/acme");
  });

  it("refuses a hook that is not a function and a limit that is not a positive number, saying what is accepted", () => {
    const hook = async () => undefined;
    expect(() => createReconnector("connect" as never, { limitMs: 1_000 })).toThrow(
      /reconnect must be a function \(signal\) => Promise<void>, got string/,
    );
    for (const limitMs of [0, -5, Number.NaN, "30000" as never, undefined as never]) {
      expect(() => createReconnector(hook, { limitMs })).toThrow(
        /limitMs must be a positive number of ms/,
      );
    }
    expect(() => createReconnector(hook, undefined as never)).toThrow(GovernorError);
  });
});
