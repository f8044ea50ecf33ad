import { describe, expect, it } from "vitest";
import { GovernorError, HostError, StoreError } from "./index.ts";
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
