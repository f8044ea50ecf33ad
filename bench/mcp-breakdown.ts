/**
 * Where a governed in-memory `callTool` spends the time it adds to the raw SDK call: the raw call,
 * then the same `tools/call` built up step by step to the governed call, read-only and undeclared
 * (a write: keyed, claimed and settled in the ledger). Every variant runs in batches of 25 calls
 * (one run per batch), all variants taking turns in one process after a warm-up; each figure is
 * the median µs per call and its ratio to the raw call. Differences between neighbouring rows are
 * what one step costs.
 *
 *   pnpm build && node --import tsx bench/mcp-breakdown.ts   # the built packages
 *
 * Rows:
 * - `raw`: `client.callTool` (the baseline of `pnpm bench`'s overhead figures).
 * - `request`: `client.request(tools/call)` with a timeout, as the adapter sends it (no output
 *   schema lookup); `request_meta`: the same with an idempotency key in `_meta`.
 * - `run_call_noop`, `keyed_run_call_noop`: `run.call` around an executor answering at once.
 * - `run_call_request`, `keyed_run_call_request`: `run.call` around `request` (a keyed call sends
 *   its `_meta`), the arguments copied as the adapter does.
 * - `keyed_run_call_request_no_ledger`: the same with a store whose claim always answers
 *   `claimed` and whose settle keeps nothing: what the ledger's claim and settle cost (a
 *   measurement only, never a store to use).
 * - `governed_read_only`, `governed_undeclared`: `governClient(client).callTool`.
 */
import { createGovernor, createMemoryStore, type Run, type Store } from "@governor/core";
import { governClient } from "@governor/mcp";
import { connectInMemory, createFaultServer } from "@governor/testkit";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { median } from "./stats.ts";

const BATCH = 25;
const TOOL = "search_notes";
const KEY_META = { "io.governor/idempotency-key": "gk_0123456789abcdef0123456789abcdef" };
const RESULT = { content: [{ type: "text" as const, text: "x" }] };

const memory = await connectInMemory(createFaultServer());
const { client } = memory;
const readOnly = createGovernor({ tools: { [TOOL]: { effect: "read_only" } } }, { metrics: false });
const undeclared = createGovernor({}, { metrics: false });
const values = createMemoryStore();
/** Claims every key and keeps no settle: the ledger's steps taken out (measurement only). */
const noLedger: Store = {
  get: (key) => values.get(key),
  set: (key, value, ttlMs) => values.set(key, value, ttlMs),
  increment: (key, by, ttlMs) => values.increment(key, by, ttlMs),
  entry: () => undefined,
  claim: (key, argsHash, options) => ({
    status: "claimed",
    entry: { key, argsHash, state: "pending", updatedAt: options.now },
  }),
  settle: () => undefined,
};
const undeclaredNoLedger = createGovernor({}, { metrics: false, store: noLedger });
const governedReadOnly = governClient(client, { governor: readOnly });
const governedUndeclared = governClient(client, { governor: undeclared });

let n = 0;
const args = () => ({ query: `q${n++}` });
const request = (
  params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> },
  timeout: number,
) => client.request({ method: "tools/call", params }, CallToolResultSchema, { timeout });
type Variant = { governor: typeof readOnly; call: (run: Run) => Promise<unknown> };
const variants: Record<string, Variant> = {
  raw: { governor: readOnly, call: () => client.callTool({ name: TOOL, arguments: args() }) },
  request: { governor: readOnly, call: () => request({ name: TOOL, arguments: args() }, 60_000) },
  request_meta: {
    governor: readOnly,
    call: () => request({ name: TOOL, arguments: args(), _meta: { ...KEY_META } }, 60_000),
  },
  run_call_noop: {
    governor: readOnly,
    call: (run) => run.call({ tool: TOOL, args: args() }, () => Promise.resolve(RESULT)),
  },
  run_call_request: {
    governor: readOnly,
    call: (run) =>
      run.call({ tool: TOOL, args: args() }, (ctx) =>
        request({ name: TOOL, arguments: { ...ctx.args } }, ctx.remainingMs),
      ),
  },
  governed_read_only: {
    governor: readOnly,
    call: (run) => governedReadOnly.callTool(run, { name: TOOL, arguments: args() }),
  },
  keyed_run_call_noop: {
    governor: undeclared,
    call: (run) => run.call({ tool: TOOL, args: args() }, () => Promise.resolve(RESULT)),
  },
  keyed_run_call_request: {
    governor: undeclared,
    call: (run) =>
      run.call({ tool: TOOL, args: args() }, (ctx) =>
        request(
          { name: TOOL, arguments: { ...ctx.args }, _meta: { ...ctx.meta } },
          ctx.remainingMs,
        ),
      ),
  },
  keyed_run_call_request_no_ledger: {
    governor: undeclaredNoLedger,
    call: (run) =>
      run.call({ tool: TOOL, args: args() }, (ctx) =>
        request(
          { name: TOOL, arguments: { ...ctx.args }, _meta: { ...ctx.meta } },
          ctx.remainingMs,
        ),
      ),
  },
  governed_undeclared: {
    governor: undeclared,
    call: (run) => governedUndeclared.callTool(run, { name: TOOL, arguments: args() }),
  },
};
const names = Object.keys(variants);
const times: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));

async function batch(name: string, record: boolean): Promise<void> {
  const variant = variants[name];
  if (variant === undefined) throw new Error(`bench: no variant ${name}`);
  const run = variant.governor.startRun();
  for (let i = 0; i < BATCH; i++) {
    const t = process.hrtime.bigint();
    const answer = (await variant.call(run)) as { kind?: string };
    if (record) times[name]?.push(Number(process.hrtime.bigint() - t) / 1000);
    if (answer.kind !== undefined && answer.kind !== "ok") {
      throw new Error(`bench: ${name} ended with ${answer.kind}`);
    }
  }
  run.end();
}

const rounds = Number(process.env.ROUNDS ?? 120);
try {
  for (let round = 0; round < 60; round++) for (const name of names) await batch(name, false);
  // Alternate the order, so no variant always runs after the same one.
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) await batch(name, true);
  }
} finally {
  await client.close();
}
const raw = median(times.raw ?? []);
const out: Record<string, { medianUs: number; ratio: number }> = {};
for (const name of names) {
  const us = median(times[name] ?? []);
  out[name] = { medianUs: Math.round(us * 100) / 100, ratio: Math.round((us / raw) * 1000) / 1000 };
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
