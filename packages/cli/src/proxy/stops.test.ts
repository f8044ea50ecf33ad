import { REASONS, type Reason } from "@governor/core";
import { describe, expect, it } from "vitest";
import { blockedText, createStopMemory, type RememberedStop, stopScope } from "./stops.ts";

describe("stopScope", () => {
  it("blocks nothing for reasons that are not stops, nor for an abort or a write in doubt", () => {
    for (const [reason, action] of Object.entries(REASONS)) {
      if (action !== "stop") expect(stopScope(reason as Reason), reason).toBe("none");
    }
    expect(stopScope("aborted")).toBe("none");
    // The ledger refuses an identical write in doubt itself, for as long as it is in doubt.
    expect(stopScope("uncertain_mutation")).toBe("none");
  });

  it("scopes credentials and spent budgets to the server, permissions to the tool, a write to the call", () => {
    expect(stopScope("unauthorized")).toBe("server");
    expect(stopScope("budget_exhausted")).toBe("window");
    expect(stopScope("deadline_exceeded")).toBe("window");
    expect(stopScope("forbidden")).toBe("tool");
    expect(stopScope("repeated_failure")).toBe("tool");
    expect(stopScope("business_rule")).toBe("call");
    expect(stopScope("partial_success")).toBe("call");
  });
});

describe("createStopMemory", () => {
  it("blocks by scope: the call with the same arguments, any call of the tool, every tool", () => {
    const memory = createStopMemory({ ttlMs: 1000, now: () => 0 });
    memory.remember("business_rule", "create", { b: 2, a: 1 });
    expect(memory.blocking("create", { a: 1, b: 2 })).toMatchObject({
      reason: "business_rule",
      scope: "call",
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
    expect(memory.remember("uncertain_mutation", "t", {})).toBeUndefined();
    expect(memory.size).toBe(0);
    memory.remember("forbidden", "t", {});
    now = 999;
    expect(memory.blocking("t", {})).toBeDefined();
    now = 1000;
    expect(memory.blocking("t", {})).toBeUndefined();
    expect(memory.size).toBe(0);
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

  it("forgets expired stops before live ones to make room", () => {
    let now = 0;
    const memory = createStopMemory({ ttlMs: 1000, now: () => now, maxEntries: 2 });
    memory.remember("forbidden", "delete", {});
    memory.remember("budget_exhausted", "t", {}, { windowEnd: 100 });
    now = 200;
    memory.remember("business_rule", "pay", { amount: 1 });
    expect(memory.size).toBe(2);
    expect(memory.blocking("delete", {})).toMatchObject({ reason: "forbidden" });
    expect(memory.blocking("pay", { amount: 1 })).toMatchObject({ reason: "business_rule" });
  });

  it("a tool-wide stop blocks every call of the tool, a narrower one does not hide it", () => {
    const memory = createStopMemory({ ttlMs: 1000, now: () => 0 });
    memory.remember("business_rule", "write_file", { path: "a.txt" });
    memory.remember("misconfigured", "write_file", { path: "b.txt" });
    expect(memory.blocking("write_file", { path: "a.txt" })).toMatchObject({
      reason: "misconfigured",
      scope: "tool",
    });
    expect(blockedText(memory.blocking("write_file", { path: "c.txt" }) as RememberedStop)).toMatch(
      /The tool write_file is stopped \(misconfigured\)/,
    );
  });

  it("reads a call's arguments only while it keeps a stop (every tool call asks it)", () => {
    const memory = createStopMemory({ ttlMs: 1000, now: () => 0 });
    let reads = 0;
    const args = {
      get amount() {
        reads += 1;
        return 9;
      },
    };
    expect(memory.blocking("pay", args)).toBeUndefined();
    expect(reads).toBe(0);
    memory.remember("business_rule", "pay", { amount: 9 });
    expect(memory.blocking("pay", args)).toMatchObject({ scope: "call" });
    expect(reads).toBeGreaterThan(0);
  });

  it("refuses a time to live that is not a positive number", () => {
    expect(() => createStopMemory({ ttlMs: 0 })).toThrow(/ttlMs must be a positive number/);
    expect(() => createStopMemory({ ttlMs: Number.NaN })).toThrow(/got NaN/);
  });
});

describe("blockedText", () => {
  it("tells the model not to retry, and never that a write may have happened (the ledger says so)", () => {
    const tool = blockedText({ reason: "forbidden", scope: "tool", tool: "pay", until: 1 });
    expect(tool).toMatch(/The tool pay is stopped \(forbidden\)/);
    expect(tool).toMatch(/Do not retry/);
    expect(tool).not.toMatch(/may have made the change/);
    expect(blockedText({ reason: "business_rule", scope: "call", tool: "pay", until: 1 })).toMatch(
      /This call of pay was stopped before \(business_rule\)/,
    );
    expect(
      blockedText({ reason: "budget_exhausted", scope: "window", tool: "pay", until: 1 }),
    ).toMatch(/paused until the current budget window ends/);
  });
});
