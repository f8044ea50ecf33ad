import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import { callHashOf, mintKey, noteSuccess, observe, openCall } from "./call-state.ts";
import type { GovernorCore } from "./hooks.ts";
import { createRunState, type RunState } from "./run-state.ts";
import type { RunOptions } from "./types.ts";

/** A governor core by hand: the call's state alone, no governor around it. */
function core(policyInput: unknown): GovernorCore {
  const policy = loadPolicy(policyInput);
  let ids = 0;
  return {
    policy,
    options: {},
    store: createMemoryStore(),
    now: () => 1_000,
    random: () => 0.5,
    toolPolicy: (tool, server) => resolveToolPolicy(policy, tool, server),
    emit: () => {},
    listening: false,
    breakerKey: (tool, server) => `br:${server ?? ""}:${tool}`,
    readBreaker: () => undefined,
    countCall: () => 1,
    takeRetry: () => true,
    storeTimeoutMs: 5_000,
    mintKey: (parts) => `k(${parts.join("|")})`,
    newRunId: () => `id${++ids}`,
  };
}

const policy = {
  tools: {
    get: { effect: "read_only" },
    pay: { effect: "mutating", idempotency: { honorsKeys: true, argument: "key" } },
  },
};

function run(options: RunOptions = {}): RunState {
  return createRunState(core(policy), options);
}

describe("openCall", () => {
  it("keys a call by server, tool and canonical arguments, and numbers it in the run", () => {
    const r = run();
    const a = openCall(r, { tool: "get", server: "s", args: { b: 1, a: 2 } });
    const b = openCall(r, { tool: "get", server: "s", args: { a: 2, b: 1 } });
    expect(a.callKey).toBe('s\u0000get\u0000{"a":2,"b":1}');
    expect(b.callKey).toBe(a.callKey);
    expect([a.seq, b.seq]).toEqual([1, 2]);
    expect(a.effect).toBe("read_only");
    expect(callHashOf(a)).toBe(callHashOf(b));
    expect(callHashOf(a)).toMatch(/^[0-9a-f]{16}$/);
    // The loop detector keys a short call by its canonical text, before and after its callKey.
    expect(a.loopKey).toBe('{"a":2,"b":1}');
    expect(b.loopKey).toBe(a.loopKey);
  });

  it("hashes a long key, and says why arguments with a cycle are not JSON", () => {
    const r = run();
    const long = openCall(r, { tool: "get", args: { text: "x".repeat(500) } });
    expect(long.callKey).toMatch(/^[0-9a-f]{32}$/);
    expect(long.loopKey).toBe(long.callKey);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const bad = openCall(r, { tool: "get", args: cyclic });
    expect(bad.canonical).toBeUndefined();
    expect(bad.invalidArgs).toMatch(/cycle at \$\.self/);
  });

  it("leaves out the argument the key travels in, yet refuses a value there that is not JSON", () => {
    const r = run();
    const a = openCall(r, { tool: "pay", args: { amount: 5, key: "model-made-1" } });
    const b = openCall(r, { tool: "pay", args: { key: "model-made-2", amount: 5 } });
    const none = openCall(r, { tool: "pay", args: { amount: 5 } });
    expect(a.canonical).toBe('{"amount":5}');
    expect([b.callKey, none.callKey]).toEqual([a.callKey, a.callKey]);
    expect(b.loopKey).toBe(a.loopKey);
    // What is sent is not touched here: the key is written over the call's own value (mintKey).
    expect(a.args).toEqual({ amount: 5, key: "model-made-1" });
    // A tool that names no key argument keeps every argument.
    expect(openCall(r, { tool: "get", args: { key: "k" } }).canonical).toBe('{"key":"k"}');
    const cyclic: Record<string, unknown> = { amount: 5 };
    cyclic.key = cyclic;
    const bad = openCall(r, { tool: "pay", args: cyclic });
    expect(bad.canonical).toBeUndefined();
    expect(bad.invalidArgs).toMatch(/cycle/);
  });
});

describe("mintKey", () => {
  it("gives no key to a read-only call, and no instance id to its run", () => {
    const r = run();
    const state = openCall(r, { tool: "get", args: { a: 1 } });
    mintKey(state);
    expect(state.key).toBeUndefined();
    expect(state.meta).toEqual({});
    expect(r.instanceId).toBeUndefined();
  });

  it("keys a write in this run instance, in the key argument and the meta", () => {
    const r = run();
    const state = openCall(r, { tool: "pay", args: { amount: 5 } });
    mintKey(state);
    expect(state.key).toMatch(/^k\(id\d+\|\|pay\|[0-9a-f]{32}\|0\)$/);
    expect(state.meta).toEqual({ "io.governor/idempotency-key": state.key });
    expect(state.args).toEqual({ amount: 5, key: state.key });
    expect(state.call.args).toEqual({ amount: 5 });
  });

  it("makes the next identical write a new logical call once one succeeded", () => {
    const r = run();
    const first = openCall(r, { tool: "pay", args: { amount: 5 } });
    mintKey(first);
    const again = openCall(r, { tool: "pay", args: { amount: 5 } });
    mintKey(again);
    expect(again.key).toBe(first.key);
    noteSuccess(first);
    const next = openCall(r, { tool: "pay", args: { amount: 5 } });
    mintKey(next);
    expect(next.key).not.toBe(first.key);
  });

  it("shares a callId's key across runs only within a scope", () => {
    const scoped = (id: string) => {
      const state = openCall(run({ idempotencyScope: "job-1" }), { tool: "pay", callId: id });
      mintKey(state);
      return state.key;
    };
    expect(scoped("c1")).toBe(scoped("c1"));
    expect(scoped("c1")).not.toBe(scoped("c2"));
    const shared = core(policy);
    const unscoped = () => {
      const r = createRunState(shared, { runId: "same" });
      const state = openCall(r, { tool: "pay", callId: "c1" });
      mintKey(state);
      return state.key;
    };
    expect(unscoped()).not.toBe(unscoped());
  });
});

describe("observe", () => {
  it("redacts a failure text once per call, and again when the text changes", () => {
    const r = run();
    const state = openCall(r, { tool: "get" });
    const secret = "token sk-live-abcdefghijklmnopqrstuvwx failed";
    const first = observe(secret, state);
    expect(first).not.toContain("sk-live-abcdefghijklmnopqrstuvwx");
    expect(observe(secret, state)).toBe(first);
    expect(state.observed?.text).toBe(secret);
    expect(observe("other", state)).toBe("other");
  });
});
