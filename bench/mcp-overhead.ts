/**
 * Success-path overhead of a governed `callTool` (`governClient(...).callTool(run, …)`) against a
 * raw `client.callTool` on the same SDK client and server, over the in-memory transport and over
 * stdio (the testkit's fault server as a child process). Raw and governed calls alternate in
 * small batches in one process, after a warm-up, so both see the same machine state; each figure
 * is the median of per-call times.
 *
 *   node --conditions=source --import tsx bench/mcp-overhead.ts   # prints the figures as JSON
 */
import { pathToFileURL } from "node:url";
import { createGovernor, type PolicyInput } from "@governor/core";
import { governClient } from "@governor/mcp";
import { connectInMemory, connectStdio, createFaultServer } from "@governor/testkit";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { median } from "./stats.ts";

/** One transport's figures. */
export interface OverheadFigure {
  /** Median µs per governed call. */
  readonly governedMedianUs: number;
  /** Median µs per raw `client.callTool`. */
  readonly rawMedianUs: number;
  /** governed / raw. */
  readonly ratio: number;
  /** Calls measured per side. */
  readonly samples: number;
}

/** The policy of the read-only figure: the tool declared read-only (no key, no ledger). */
const READ_ONLY: PolicyInput = { tools: { search_notes: { effect: "read_only" } } };

/** Calls per batch before switching sides; a run serves one governed batch (well under its budgets). */
const BATCH = 25;

async function measure(
  client: Client,
  samples: number,
  warmup: number,
  policy: PolicyInput = READ_ONLY,
): Promise<OverheadFigure> {
  const governor = createGovernor(policy);
  const governed = governClient(client, { governor });
  const args = (i: number) => ({ query: `q${i}` });
  const raw: number[] = [];
  const ours: number[] = [];
  let n = 0;
  const rawBatch = async (record: boolean) => {
    for (let i = 0; i < BATCH; i++) {
      const t = process.hrtime.bigint();
      await client.callTool({ name: "search_notes", arguments: args(n++) });
      if (record) raw.push(Number(process.hrtime.bigint() - t) / 1000);
    }
  };
  const governedBatch = async (record: boolean) => {
    const run = governor.startRun();
    for (let i = 0; i < BATCH; i++) {
      const t = process.hrtime.bigint();
      const outcome = await governed.callTool(run, { name: "search_notes", arguments: args(n++) });
      if (record) ours.push(Number(process.hrtime.bigint() - t) / 1000);
      if (outcome.kind !== "ok") throw new Error(`bench: governed call ended with ${outcome.kind}`);
    }
    run.end();
  };
  for (let done = 0; done < warmup; done += BATCH) {
    await rawBatch(false);
    await governedBatch(false);
  }
  // Alternate which side goes first, so neither always runs on a warmer path.
  for (let round = 0; raw.length < samples; round++) {
    if (round % 2 === 0) {
      await rawBatch(true);
      await governedBatch(true);
    } else {
      await governedBatch(true);
      await rawBatch(true);
    }
  }
  const governedMedianUs = median(ours);
  const rawMedianUs = median(raw);
  return {
    governedMedianUs: Math.round(governedMedianUs * 100) / 100,
    rawMedianUs: Math.round(rawMedianUs * 100) / 100,
    ratio: Math.round((governedMedianUs / rawMedianUs) * 1000) / 1000,
    samples: raw.length,
  };
}

/**
 * Measures the governed vs raw success path: 2000 calls per side in memory (the tool declared
 * read-only, and undeclared: a mutating tool, keyed and recorded in the ledger), 500 over stdio.
 * @example
 * const { inmemory, inmemoryUndeclared, stdio } = await benchMcpOverhead();
 */
export async function benchMcpOverhead(
  options: { inmemorySamples?: number; stdioSamples?: number } = {},
): Promise<{
  inmemory: OverheadFigure;
  inmemoryUndeclared: OverheadFigure;
  stdio: OverheadFigure;
}> {
  const memory = await connectInMemory(createFaultServer());
  let inmemory: OverheadFigure;
  let inmemoryUndeclared: OverheadFigure;
  try {
    // Both policies warm the shared code first: otherwise the first figure measured includes the
    // JIT's warm-up of code the second then finds optimised (read-only read 2.7 with 500 warm-up
    // calls, 1.7 with 3000, the same code).
    for (const policy of [READ_ONLY, {}]) await measure(memory.client, BATCH, 1500, policy);
    inmemory = await measure(memory.client, options.inmemorySamples ?? 2000, 500);
    inmemoryUndeclared = await measure(memory.client, options.inmemorySamples ?? 2000, 500, {});
  } finally {
    await memory.client.close();
  }
  const child = await connectStdio();
  let stdio: OverheadFigure;
  try {
    stdio = await measure(child.client, options.stdioSamples ?? 500, 100);
  } finally {
    await child.client.close();
  }
  return { inmemory, inmemoryUndeclared, stdio };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(`${JSON.stringify(await benchMcpOverhead(), null, 2)}\n`);
}
