import { REASONS, type Reason } from "@governor/core";
import { describe, expect, it } from "vitest";
import { blockedText, createStopMemory, type RememberedStop, stopScope } from "./stops.ts";

describe("stopScope", () => {
  it("blocks nothing for reasons that are not stops, nor for an abort", () => {
    for (const [reason, action] of Object.entries(REASONS)) {
      if (action !== "stop") expect(stopScope(reason as Reason), reason).toBe("none");
    }
    expect(stopScope("aborted")).toBe("none");
  });

  it("scopes credentials and spent budgets to the server, permissions to the tool, a write to the call", () => {
    expect(stopScope("unauthorized")).toBe("server");
    expect(stopScope("budget_exhausted")).toBe("window");
    expect(stopScope("deadline_exceeded")).toBe("window");
    expect(stopScope("forbidden")).toBe("tool");
    expect(stopScope("repeated_failure")).toBe("tool");
    expect(stopScope("business_rule")).toBe("call");
    expect(stopScope("uncertain_mutation")).toBe("call");
  });
});

describe("createStopMemory", () => {
  it("blocks by scope: the call with the same arguments, any call of the tool, every tool", () => {
    const memory = createStopMemory({ ttlMs: 1000, now: () => 0 });
    memory.remember("uncertain_mutation", "create", { b: 2, a: 1 }, { idempotencyKey: "key-1" });
    expect(memory.blocking("create", { a: 1, b: 2 })).toMatchObject({
      scope: "call",
      idempotencyKey: "key-1",
    });
    expect(memory.blocking("create", { a: 1, b: 3 })).toBeUndefined();
    memory.remember("forbidden", "delete", { id: "x" });
    expect(memory.blocking("delete", { id: "y" })).toMatchObject({ scope: "tool" });
    expect(memory.blocking("read", {})).toBeUndefined();
    memory.remember("unauthorized", "read", {});
    expect(memory.blocking("anything", undefined)).toMatchObject({ scope: "server" });
  });

  it("forgets a stop after its time, and remembers nothing for scope none", () => {
    let now = 0;
    const memory = createStopMemory({ ttlMs: 1000, now: () => now });
    expect(memory.remember("aborted", "t", {})).toBeUndefined();
    memory.remember("forbidden", "t", {});
    now = 999;
    expect(memory.blocking("t", {})).toBeDefined();
    now = 1000;
    expect(memory.blocking("t", {})).toBeUndefined();
    expect(memory.size).toBe(0);
  });

  it("a stop that names a key (a write that may have happened) blocks the call, even for scope none or after its window", () => {
    let now = 0;
    const memory = createStopMemory({ ttlMs: 1000, now: () => now });
    expect(memory.remember("aborted", "pay", { a: 1 }, { idempotencyKey: "k1" })).toMatchObject({
      scope: "call",
      idempotencyKey: "k1",
    });
    expect(memory.blocking("pay", { a: 1 })).toMatchObject({ reason: "aborted", scope: "call" });
    expect(memory.blocking("pay", { a: 2 })).toBeUndefined();
    memory.remember("deadline_exceeded", "send", { b: 1 }, { idempotencyKey: "k2", windowEnd: 10 });
    expect(memory.blocking("other", {})).toMatchObject({ scope: "window" });
    now = 10;
    expect(memory.blocking("other", {})).toBeUndefined();
    expect(memory.blocking("send", { b: 1 })).toMatchObject({
      scope: "call",
      idempotencyKey: "k2",
    });
    now = 1000;
    expect(memory.blocking("send", { b: 1 })).toBeUndefined();
  });

  it("blocks a window stop until the window ends, not for the time to live", () => {
    let now = 0;
    const memory = createStopMemory({ ttlMs: 1_000_000, now: () => now });
    memory.remember("budget_exhausted", "t", {}, { windowEnd: 500 });
    expect(memory.blocking("other", {})).toMatchObject({ scope: "window", until: 500 });
    now = 500;
    expect(memory.blocking("other", {})).toBeUndefined();
  });

  it("stays bounded, forgetting the oldest first", () => {
    const memory = createStopMemory({ ttlMs: 1000, now: () => 0, maxEntries: 3 });
    for (let i = 0; i < 10; i++) memory.remember("business_rule", "pay", { amount: i });
    expect(memory.size).toBe(3);
    expect(memory.blocking("pay", { amount: 9 })).toBeDefined();
    expect(memory.blocking("pay", { amount: 0 })).toBeUndefined();
  });

  it("never forgets a write that may have happened to make room, only when its time is up", () => {
    let now = 0;
    const memory = createStopMemory({ ttlMs: 1000, now: () => now, maxEntries: 2 });
    memory.remember("uncertain_mutation", "pay", { amount: 5 }, { idempotencyKey: "k1" });
    now = 10;
    for (let i = 0; i < 10; i++) memory.remember("business_rule", "pay", { amount: 100 + i });
    expect(memory.blocking("pay", { amount: 5 })).toMatchObject({ idempotencyKey: "k1" });
    expect(memory.size).toBe(2);
    expect(memory.blocking("pay", { amount: 109 })).toBeDefined();
    now = 1000;
    memory.remember("forbidden", "delete", {});
    expect(memory.blocking("pay", { amount: 5 })).toBeUndefined();
  });

  it("issue 29: after a tool-wide stop of a write in doubt, only that write is told it may have happened", () => {
    const memory = createStopMemory({ ttlMs: 1000, now: () => 0 });
    memory.remember("misconfigured", "write_file", { path: "a.txt" }, { idempotencyKey: "k1" });
    const other = memory.blocking("write_file", { path: "b.txt" });
    expect(other).toMatchObject({ reason: "misconfigured", scope: "tool" });
    expect(other?.idempotencyKey).toBeUndefined();
    expect(blockedText(other as RememberedStop)).not.toMatch(/may have made the change/);
    const same = memory.blocking("write_file", { path: "a.txt" });
    expect(same).toMatchObject({ reason: "misconfigured", scope: "call", idempotencyKey: "k1" });
    expect(blockedText(same as RememberedStop)).toMatch(/may have made the change/);
  });

  it("refuses a time to live that is not a positive number", () => {
    expect(() => createStopMemory({ ttlMs: 0 })).toThrow(/ttlMs must be a positive number/);
    expect(() => createStopMemory({ ttlMs: Number.NaN })).toThrow(/got NaN/);
  });
});

describe("blockedText", () => {
  it("tells the model not to retry, and not to resend a write that may have happened", () => {
    const text = blockedText({
      reason: "uncertain_mutation",
      scope: "call",
      tool: "pay",
      until: 1,
    });
    expect(text).toMatch(/Do not retry/);
    expect(text).toMatch(/do not send it again/);
    expect(blockedText({ reason: "forbidden", scope: "tool", tool: "pay", until: 1 })).toMatch(
      /The tool pay is stopped \(forbidden\)/,
    );
    expect(blockedText({ reason: "forbidden", scope: "tool", tool: "pay", until: 1 })).not.toMatch(
      /may have made the change/,
    );
  });

  it("says a write may have happened for any stop that names its key", () => {
    // Since a write whose answer was lost keeps its key whatever stops it afterwards, a deadline
    // or a budget can end it too.
    const text = blockedText({
      reason: "budget_exhausted",
      scope: "window",
      tool: "pay",
      until: 1,
      idempotencyKey: "gk_0123",
    });
    expect(text).toMatch(/may have made the change: do not send it again/);
    expect(text).not.toContain("gk_0123");
  });
});
