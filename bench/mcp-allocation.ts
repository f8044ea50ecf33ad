/**
 * Bytes allocated per in-memory `callTool`: raw, inside a bare `run.call`, governed with the tool
 * declared read-only, and governed undeclared (a write: keyed and recorded in the ledger). Each
 * figure is the median of batches counted by V8's GC profiler (as `bytes_per_call`). The raw SDK
 * call allocates most of it; the differences are what Governor adds.
 *
 *   pnpm build && node --expose-gc --import tsx bench/mcp-allocation.ts   # the built packages
 */
import { createGovernor } from "@governor/core";
import { governClient } from "@governor/mcp";
import { connectInMemory, createFaultServer } from "@governor/testkit";
import { allocatedPerCall } from "./run-path.ts";
import { median } from "./stats.ts";

const memory = await connectInMemory(createFaultServer());
const { client } = memory;
const readOnly = createGovernor(
  { tools: { search_notes: { effect: "read_only" } } },
  { metrics: false },
);
const undeclared = createGovernor({}, { metrics: false });
const governedReadOnly = governClient(client, { governor: readOnly });
const governedUndeclared = governClient(client, { governor: undeclared });
let n = 0;
const args = () => ({ query: `q${n++}` });
const sides = {
  raw: {
    governor: readOnly,
    call: () => client.callTool({ name: "search_notes", arguments: args() }),
  },
  run_call: {
    governor: readOnly,
    call: (run: ReturnType<typeof readOnly.startRun>) => {
      const a = args();
      return run.call({ tool: "search_notes", args: a }, () =>
        client.callTool({ name: "search_notes", arguments: a }),
      );
    },
  },
  governed_read_only: {
    governor: readOnly,
    call: (run: ReturnType<typeof readOnly.startRun>) =>
      governedReadOnly.callTool(run, { name: "search_notes", arguments: args() }),
  },
  governed_undeclared: {
    governor: undeclared,
    call: (run: ReturnType<typeof readOnly.startRun>) =>
      governedUndeclared.callTool(run, { name: "search_notes", arguments: args() }),
  },
};
const bytes: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
try {
  for (let round = 0; round < 12; round++) {
    for (const [name, side] of Object.entries(sides)) {
      // One run per 25 calls, as in bench/mcp-overhead.ts.
      let run = side.governor.startRun();
      const perCall = await allocatedPerCall(1_000, async (i) => {
        if (i % 25 === 0) {
          run.end();
          run = side.governor.startRun();
        }
        await side.call(run);
      });
      run.end();
      if (round >= 4) bytes[name]?.push(perCall);
    }
  }
} finally {
  await client.close();
}
const out: Record<string, number> = {};
for (const [name, list] of Object.entries(bytes)) out[name] = Math.round(median(list));
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
