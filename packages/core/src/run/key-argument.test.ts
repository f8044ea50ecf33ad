import { describe, expect, it } from "vitest";
import { canonicalJson } from "../judge/canonical.ts";
import { withoutKeyArgument } from "./key-argument.ts";

const keyed = { idempotency: { argument: "idempotency_key" } };

describe("withoutKeyArgument", () => {
  it("leaves out the argument the policy names, and only it", () => {
    const args = { amount: 5, idempotency_key: "model-made-1", to: "acct_1" };
    expect(withoutKeyArgument(args, keyed)).toEqual({ amount: 5, to: "acct_1" });
    // The call's own arguments are not changed.
    expect(args.idempotency_key).toBe("model-made-1");
  });

  it("answers the same object when there is nothing to leave out", () => {
    const args = { amount: 5 };
    expect(withoutKeyArgument(args, keyed)).toBe(args);
    expect(withoutKeyArgument({ ...args, idempotency_key: "k" }, { idempotency: {} })).toEqual({
      ...args,
      idempotency_key: "k",
    });
  });

  it("never reads the value it leaves out, and keeps an own __proto__ argument an argument", () => {
    const args = JSON.parse('{"__proto__":{"x":1},"amount":5}') as Record<string, unknown>;
    Object.defineProperty(args, "idempotency_key", {
      enumerable: true,
      get() {
        throw new Error("read");
      },
    });
    const rest = withoutKeyArgument(args, keyed);
    expect(Object.keys(rest).sort()).toEqual(["__proto__", "amount"]);
    expect(canonicalJson(rest)).toBe('{"__proto__":{"x":1},"amount":5}');
  });
});
