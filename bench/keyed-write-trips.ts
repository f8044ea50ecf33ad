/**
 * Store operations per keyed write (each a round trip on a remote store such as Redis), of this
 * checkout and a base build side by side: a plain write, one with a live signal (its entry freed
 * once its answer is handed over), and one whose signal aborts in `beforeAnswer` (its answer kept).
 * "aborted while freed": the signal aborts while that free is on its way (its answer kept right
 * after it).
 * Counts every call of a store method, on a memory store whose answers are made promises, until the
 * call's writes are done (a run whose call's signal aborted ends then: its `release` is counted).
 *
 *   pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base   # on the base checkout
 *   GOVERNOR_BASE=/tmp/governor-base node --conditions=source --import tsx bench/keyed-write-trips.ts
 */
import * as core from "@governor/core";
import { baseDir, importBase } from "./base-build.ts";

const baseCore = await importBase<typeof core>(
  baseDir("bench/keyed-write-trips.ts"),
  "packages/core/dist/index.js",
);
const OK = { content: [{ type: "text", text: "ok" }] };
/** Aborts the call of the case "aborted while freed", once, as its entry's free is sent. */
let abortOnFree: (() => void) | undefined;

const cases: Record<string, (n: number) => core.ToolCall> = {
  plain: (n) => ({ tool: "pay", args: { n } }),
  signal: (n) => ({ tool: "pay", args: { n }, signal: new AbortController().signal }),
  // The signal aborts as the free of the write's entry is on its way (see `abortOnFree`).
  "aborted while freed": (n) => {
    const cut = new AbortController();
    abortOnFree = () => cut.abort();
    return { tool: "pay", args: { n }, signal: cut.signal };
  },
  "aborted in beforeAnswer": (n) => {
    const cut = new AbortController();
    return { tool: "pay", args: { n }, signal: cut.signal, beforeAnswer: async () => cut.abort() };
  },
};

const rows: Record<string, Record<string, string>> = {};
for (const [side, c] of [
  ["base", baseCore],
  ["this", core],
] as const) {
  const real = c.createMemoryStore();
  let ops: string[] = [];
  const store = new Proxy(real, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        ops.push(String(property));
        const [key, state] = args as [string, string];
        if (property === "settle" && key.startsWith("gd_") && state === "failed" && abortOnFree) {
          const abort = abortOnFree;
          abortOnFree = undefined;
          // After this settle was made: its answer comes once the call's signal aborted.
          queueMicrotask(abort);
        }
        return Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args));
      };
    },
  });
  const governor = c.createGovernor(
    { tools: { pay: { effect: "mutating" } } },
    { store, metrics: false },
  );
  let n = 0;
  for (const [name, make] of Object.entries(cases)) {
    ops = [];
    const run = governor.startRun({ idempotencyScope: "bench" });
    await run.call(make(n++), async () => OK);
    // The writes a hand-over leaves going on past the call's cut land meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 20));
    rows[name] = { ...rows[name], [side]: `${ops.length} (${ops.join(", ")})` };
    run.end();
  }
}
console.log(JSON.stringify(rows, null, 2));
