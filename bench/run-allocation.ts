/**
 * What `bytes_per_call` (run-path.ts `benchAllocation`) is made of: the same harness (batches of
 * 2,000 awaited calls, a new run per batch, V8's GC profiler, median of 20 batches) around
 * - `direct`: the executor called directly (the figure's baseline);
 * - `direct + request`: the same, with the `{ tool, args: { i } }` objects the bench makes for
 *   each `run.call` made too: what the harness spends on a call whatever governs it;
 * - `run.call`: the figure itself.
 * `run.call - direct + request` is what Governor allocates per successful call.
 *
 *   pnpm build && node --expose-gc --import tsx bench/run-allocation.ts   # the built packages
 */
import { createGovernor } from "@governor/core";
import { allocatedPerCall } from "./run-path.ts";
import { median } from "./stats.ts";

const ok = { content: [{ type: "text", text: "ok" }] };
const noop = async () => ok;
const governor = createGovernor(
  { tools: { noop: { effect: "read_only" } }, budgets: { calls: 100_000_000 } },
  { metrics: false },
);
let n = 0;
// The request escapes, as one given to `run.call` does (V8 would not make one that does not).
let kept: unknown;
/** Makes the request a `run.call` would be given, and hands the executor's promise back. */
function withRequest(): Promise<unknown> {
  const request = { tool: "noop", args: { i: n++ } };
  kept = request;
  return noop();
}
const figures: Record<string, number[]> = { direct: [], "direct + request": [], "run.call": [] };
for (let round = 0; round < 23; round++) {
  const run = governor.startRun();
  const sides: [string, () => Promise<number>][] = [
    ["direct", () => allocatedPerCall(2_000, () => noop())],
    ["direct + request", () => allocatedPerCall(2_000, () => withRequest())],
    [
      "run.call",
      () => allocatedPerCall(2_000, () => run.call({ tool: "noop", args: { i: n++ } }, noop)),
    ],
  ];
  for (const [name, side] of sides) {
    const bytes = await side();
    if (round >= 3) figures[name]?.push(bytes);
  }
  run.end();
}
if (kept === undefined) throw new Error("unreachable");
const out = Object.fromEntries(
  Object.entries(figures).map(([name, values]) => [name, Math.round(median(values))]),
);
process.stdout.write(
  `${JSON.stringify({ ...out, governor: (out["run.call"] ?? 0) - (out["direct + request"] ?? 0) }, null, 2)}\n`,
);
