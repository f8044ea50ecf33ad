/**
 * Where the bytes of a successful `run.call` are allocated, function by function: V8's sampling
 * heap profiler (through the inspector, every 32 bytes on average, objects the GC collected
 * included) over 100,000 calls (60,000 keyed writes) after a warm-up, in batches of 2,000 with a
 * run per batch as `bytes_per_call` makes them. Prints bytes per call for each allocating function
 * and the total, for the executor called directly (`direct`: the harness's own part) and for
 * `run.call`.
 *
 *   pnpm build && node --import tsx bench/allocation-sites.ts              # read-only tool
 *   pnpm build && node --import tsx bench/allocation-sites.ts --undeclared # a keyed write
 *   node --no-turbo-inlining --import tsx bench/allocation-sites.ts       # one row per function
 *
 * Why beside `bytes_per_call`: that figure counts heap growth plus what each GC freed, which is
 * exact for garbage but reads promoted survivors (the loop detector keeps a run's call keys) in
 * whole allocation buffers: one batch reads 990 to 1,370 bytes per call on unchanged code, its
 * lowest readings equal to this profiler's total. This one sees objects, not pages; it is
 * statistical, and its figures are steady within a few bytes per call. Inlined functions' bytes
 * count under the function they were inlined into unless `--no-turbo-inlining` is given (which
 * changes what escape analysis removes a little: compare totals, not rows, across the two).
 */
import { createGovernor } from "@governor/core";
import { sampleAllocations, totalBytes } from "./heap-sampler.ts";

const undeclared = process.argv.includes("--undeclared");
const ok = { content: [{ type: "text", text: "ok" }] };
const noop = async () => ok;
const governor = createGovernor(
  {
    tools: { noop: undeclared ? {} : { effect: "read_only" } },
    budgets: { calls: 100_000_000 },
  },
  { metrics: false },
);

const BATCH = 2_000;
/** Calls measured; with the warm-up, keyed writes stay under the memory store's 100,000 entries. */
const CALLS = undeclared ? 60_000 : 100_000;
const WARM_BATCHES = undeclared ? 15 : 25;
let n = 0;

async function batches(count: number, direct: boolean): Promise<void> {
  for (let b = 0; b < count; b++) {
    const run = governor.startRun();
    for (let i = 0; i < BATCH; i++) {
      if (direct) {
        await noop();
        continue;
      }
      const outcome = await run.call({ tool: "noop", args: { i: n++ } }, noop);
      if (outcome.kind !== "ok") throw new Error(`bench: run.call ended with ${outcome.kind}`);
    }
    run.end();
  }
}

/** Bytes per call by allocating function (`name file`), sorted, with the total. */
async function sites(direct: boolean): Promise<{ total: number; rows: [string, number][] }> {
  await batches(WARM_BATCHES, direct);
  const bySite = await sampleAllocations(() => batches(CALLS / BATCH, direct));
  const rows: [string, number][] = [...bySite]
    .map(([site, bytes]): [string, number] => [site, Math.round((bytes / CALLS) * 10) / 10])
    .filter(([, perCall]) => perCall >= 1)
    .sort((a, b) => b[1] - a[1]);
  return { total: Math.round((totalBytes(bySite) / CALLS) * 10) / 10, rows };
}

const direct = await sites(true);
const governed = await sites(false);
process.stdout.write(
  `${JSON.stringify(
    {
      tool: undeclared ? "undeclared (keyed write)" : "read_only",
      direct_total: direct.total,
      run_call_total: governed.total,
      governor: Math.round((governed.total - direct.total) * 10) / 10,
      run_call_sites: Object.fromEntries(governed.rows),
    },
    null,
    2,
  )}\n`,
);
