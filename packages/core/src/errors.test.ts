import { describe, expect, it } from "vitest";
import {
  createGovernor,
  GovernorError,
  GovernorStopError,
  HostError,
  StoreError,
} from "./index.ts";
import { hostErrorText } from "./judge/index.ts";

describe("HostError.from: what an adapter gives the host when run.call rejects", () => {
  it("keeps a HostError as it is", () => {
    const host = new HostError({
      tool: "t",
      reason: "protocol_error",
      channel: "protocol",
      message: "m",
    });
    expect(HostError.from(host, "other")).toBe(host);
  });

  it("wraps anything else in a fixed message, the raw error its cause", () => {
    const raw = new Error("connect ECONNREFUSED redis://admin:hunter2@10.0.0.5:6379");
    const wrapped = HostError.from(raw, "send_mail", "mail");
    expect(wrapped).toMatchObject({
      tool: "send_mail",
      server: "mail",
      reason: "unexpected_error",
      channel: "local",
      code: "host_error",
    });
    expect(wrapped.cause).toBe(raw);
    expect(wrapped.message).not.toContain("hunter2");
    expect(wrapped.message).not.toContain("10.0.0.5");
    const store = HostError.from(
      new StoreError({ reason: "unavailable", operation: "get", message: "store down" }),
      "t",
    );
    expect(store.reason).toBe("store_error");
    expect(GovernorError.isInstance(store)).toBe(true);
  });

  it("stopReason is the reason when it is one, protocol_error otherwise", () => {
    const known = new HostError({
      tool: "t",
      reason: "session_expired",
      channel: "local",
      message: "m",
    });
    expect(known.stopReason).toBe("session_expired");
    expect(HostError.from(new Error("x"), "t").stopReason).toBe("protocol_error");
  });

  it("hostErrorText names the tool and nothing of the raw error", () => {
    const wrapped = HostError.from(new Error("at /srv/app/secret.ts:12 token=sk-live-abcdef"), "t");
    const text = hostErrorText(wrapped);
    expect(text).toContain("t");
    expect(text).toContain("could not be completed");
    expect(text).not.toMatch(/srv|secret|sk-live/);
  });
});

describe("GovernorStopError: the one error every adapter throws to end the loop", () => {
  const summaryOf = async () => {
    const run = createGovernor({}).startRun();
    await run.call({ tool: "t" }, async () => 1);
    return run.end();
  };

  it("carries every detail it was given, and says why, where and which key", async () => {
    const summary = await summaryOf();
    const host = new HostError({
      tool: "send",
      reason: "protocol_error",
      channel: "protocol",
      message: "m",
    });
    const stop = new GovernorStopError({
      reason: "uncertain_mutation",
      summary,
      tool: "send",
      server: "mail",
      personResolvable: true,
      idempotencyKey: "gk_abc",
      hostError: host,
      modelText: "send: the write may have happened. Do not repeat it.",
    });
    expect(stop).toBeInstanceOf(GovernorError);
    expect(stop).toMatchObject({
      name: "GovernorStopError",
      code: "run_ended",
      reason: "uncertain_mutation",
      tool: "send",
      server: "mail",
      personResolvable: true,
      idempotencyKey: "gk_abc",
      modelText: "send: the write may have happened. Do not repeat it.",
    });
    expect(stop.summary).toBe(summary);
    expect(stop.hostError).toBe(host);
    expect(stop.cause).toBe(host);
    expect(stop.message).toBe(
      "Governor stopped the run (uncertain_mutation) at send; the write's idempotency key is gk_abc",
    );
  });

  it("a run the host ended: reason completed, no tool, not person-resolvable", async () => {
    const stop = new GovernorStopError({ reason: "completed", summary: await summaryOf() });
    expect(stop.message).toBe("Governor stopped the run (completed)");
    expect(stop).toMatchObject({ tool: undefined, server: undefined, personResolvable: false });
    expect(stop.cause).toBeUndefined();
  });

  it("isStop knows one from another copy of the package, and nothing else", async () => {
    const stop = new GovernorStopError({ reason: "forbidden", summary: await summaryOf() });
    expect(GovernorStopError.isStop(stop)).toBe(true);
    // Another copy's instance: same marker, code and name, another class.
    const copy = Object.assign(new GovernorError("run_ended", "x"), { name: "GovernorStopError" });
    expect(copy).not.toBeInstanceOf(GovernorStopError);
    expect(GovernorStopError.isStop(copy)).toBe(true);
    for (const other of [
      new GovernorError("run_ended", "x"),
      new HostError({ tool: "t", reason: "r", channel: "c", message: "m" }),
      Object.assign(new Error("x"), { name: "GovernorStopError", code: "run_ended" }),
      null,
      "GovernorStopError",
    ]) {
      expect(GovernorStopError.isStop(other)).toBe(false);
    }
  });
});
