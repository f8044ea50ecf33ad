/**
 * What the ledger tests on every store set up again and again: a write tool that counts what
 * reaches it, runs in the one idempotency scope their identical calls share, a call whose host
 * gives up just before the answer, and a store whose `settle` the test steps into.
 */
import type { Governor, Run, Store, ToolCall } from "@governor/core";

/** A tool's answer with one text part. */
export const ok = (t: string) => ({ content: [{ type: "text", text: t }] });

/** A write tool whose nth sending answers `<word> n`; `sent` counts the sendings. */
export interface WriteTool {
  sent: number;
  send(): Promise<ReturnType<typeof ok>>;
}

export function writeTool(word = "created"): WriteTool {
  const tool: WriteTool = {
    sent: 0,
    send: async () => {
      tool.sent += 1;
      return ok(`${word} ${tool.sent}`);
    },
  };
  return tool;
}

/** A run in scope `s`, the scope every identical call of these tests is made in. */
export function scoped(governor: Governor): Run {
  return governor.startRun({ idempotencyScope: "s" });
}

/** `call` from a host that gives up on it (aborts its signal) just before its answer comes. */
export function givenUp<C extends ToolCall>(call: C): C {
  const cancel = new AbortController();
  return { ...call, signal: cancel.signal, beforeAnswer: async () => cancel.abort() };
}

export type Settle = Parameters<Store["settle"]>;

/** `store`, its `settle` replaced by `settle(target, ...args)`; the rest of it as it is. */
export function onSettle(
  store: Store,
  settle: (target: Store, ...args: Settle) => Promise<void>,
): Store {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === "settle") return (...args: Settle) => settle(target, ...args);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
