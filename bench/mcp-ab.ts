/**
 * Two builds of Governor side by side in one process: the governed in-memory `callTool` of this
 * checkout's built packages against a copy of another build's `@governor/core` and `@governor/mcp`
 * (made by bench/snapshot-dist.sh), each read-only and undeclared (a write: keyed and recorded in
 * the ledger), with the raw SDK call as the common baseline. All sides share one SDK client and
 * server, and take turns in batches of 25 calls (one run per batch), the order alternating each
 * round. Each figure is the median µs per call, and its ratio to the raw call's median.
 *
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/mcp-ab.ts
 *
 * ROUNDS (default 200) sets the measured rounds per side.
 */
import * as core from "@governor/core";
import * as mcp from "@governor/mcp";
import { connectInMemory, createFaultServer } from "@governor/testkit";
import { baseDir, importBase } from "./base-build.ts";
import { median } from "./stats.ts";

const base = baseDir("bench/mcp-ab.ts");
const baseCore = await importBase<typeof core>(base, "packages/core/dist/index.js");
const baseMcp = await importBase<typeof mcp>(base, "packages/mcp/dist/index.js");

const BATCH = 25;
const TOOL = "search_notes";
const READ_ONLY: core.PolicyInput = { tools: { [TOOL]: { effect: "read_only" } } };
const memory = await connectInMemory(createFaultServer());
const { client } = memory;

type Side = { governor: core.Governor; callTool: mcp.GovernedClient["callTool"] } | undefined;
const side = (c: typeof core, m: typeof mcp, policy: core.PolicyInput): Side => {
  const governor = c.createGovernor(policy, { metrics: false });
  return { governor, callTool: m.governClient(client, { governor }).callTool };
};
const sides: Record<string, Side> = {
  raw: undefined,
  read_only: side(core, mcp, READ_ONLY),
  base_read_only: side(baseCore, baseMcp, READ_ONLY),
  undeclared: side(core, mcp, {}),
  base_undeclared: side(baseCore, baseMcp, {}),
};
const names = Object.keys(sides);
const times: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
let n = 0;

async function batch(name: string, record: boolean): Promise<void> {
  const s = sides[name];
  const run = s?.governor.startRun();
  for (let i = 0; i < BATCH; i++) {
    const t = process.hrtime.bigint();
    const args = { query: `q${n++}` };
    if (s === undefined || run === undefined) {
      await client.callTool({ name: TOOL, arguments: args });
    } else {
      const outcome = await s.callTool(run, { name: TOOL, arguments: args });
      if (outcome.kind !== "ok") throw new Error(`bench: ${name} ended with ${outcome.kind}`);
    }
    if (record) times[name]?.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  run?.end();
}

const rounds = Number(process.env.ROUNDS ?? 200);
try {
  for (let round = 0; round < 80; round++) for (const name of names) await batch(name, false);
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
process.stdout.write(`${JSON.stringify({ base, ...out }, null, 2)}\n`);
