/**
 * What `captureRetryAfter` costs a governed call: the AsyncLocalStorage `within` that ties each
 * attempt's HTTP response to its own call (retry-after.ts). Three sides, each a process of its own
 * (an AsyncLocalStorage, once run, turns on Node's async hooks for every promise of the process
 * until Node 24's AsyncContextFrame, so the sides cannot share one), run in turn, the order
 * rotating each round:
 *
 * - `none`: `governClient` without `retryAfter`, the transport with its default fetch;
 * - `fetch_only`: the transport with `captureRetryAfter().fetch`, `governClient` without
 *   `retryAfter` (the wrapper runs, no AsyncLocalStorage is ever entered);
 * - `within`: both, as docs/mcp.md shows it (each attempt's SDK call inside `within`).
 *
 * Each side calls `search_notes` (read-only) over Streamable HTTP on loopback, the server (the
 * testkit's fault server) in this process, shared by all sides; with TRANSPORT=memory, over the
 * SDK's in-memory transport in the side's own process instead (no fetch is made: `within` and its
 * hooks alone). Prints each side's median µs per call over its rounds, the ratio to `none`, and
 * the load average before and after.
 *
 *   pnpm build && node --import tsx bench/retry-after-als.ts
 *   NODE=/path/to/node22/bin/node node --import tsx bench/retry-after-als.ts   # the sides on it
 *
 * ROUNDS (default 6) rounds of one process per side; CALLS (default 2000) measured calls per
 * process after WARMUP (default 500).
 */
import { execFile, execFileSync } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { median } from "./stats.ts";

type SideName = "none" | "fetch_only" | "within";
const SIDES: readonly SideName[] = ["none", "fetch_only", "within"];
const TOOL = "search_notes";

/** One side in this process: its median µs per call. */
async function measureSide(side: SideName, url: string | undefined): Promise<number> {
  const core = await import("@governor/core");
  const mcp = await import("@governor/mcp");
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const calls = Number(process.env.CALLS ?? 2000);
  const warmup = Number(process.env.WARMUP ?? 500);
  const capture = mcp.captureRetryAfter();
  if (url === undefined) {
    const { connectInMemory, createFaultServer } = await import("@governor/testkit");
    const memory = await connectInMemory(createFaultServer());
    return run(memory.client, () => memory.client.close());
  }
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  );
  const client = new Client({ name: "bench-host", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(url),
      side === "none" ? {} : { fetch: capture.fetch },
    ),
  );
  return run(client, () => client.close());

  async function run(
    on: InstanceType<typeof Client>,
    close: () => Promise<unknown>,
  ): Promise<number> {
    const governor = core.createGovernor(
      { tools: { [TOOL]: { effect: "read_only" } }, budgets: { calls: 100_000_000 } },
      { metrics: false },
    );
    const governed = mcp.governClient(on, {
      governor,
      ...(side === "within" && { retryAfter: capture }),
    });
    const times: number[] = [];
    let n = 0;
    try {
      for (let i = 0; i < warmup + calls; i++) {
        const run = governor.startRun();
        const t = process.hrtime.bigint();
        const outcome = await governed.callTool(run, {
          name: TOOL,
          arguments: { query: `q${n++}` },
        });
        if (i >= warmup) times.push(Number(process.hrtime.bigint() - t) / 1000);
        run.end();
        if (outcome.kind !== "ok") throw new Error(`bench: ${side} ended with ${outcome.kind}`);
      }
    } finally {
      await close();
    }
    return median(times);
  }
}

const self = fileURLToPath(import.meta.url);
const run = promisify(execFile);
const childSide = process.env.RETRY_AFTER_ALS_SIDE as SideName | undefined;

if (childSide !== undefined) {
  const us = await measureSide(childSide, process.env.RETRY_AFTER_ALS_URL || undefined);
  process.stdout.write(`${us}\n`);
} else {
  const memory = process.env.TRANSPORT === "memory";
  const rounds = Number(process.env.ROUNDS ?? 6);
  const node = process.env.NODE || process.execPath;
  const { startHttpServer } = await import("@governor/testkit");
  const http = memory ? undefined : await startHttpServer();
  const loadBefore = loadavg()[0] as number;
  const medians: Record<SideName, number[]> = { none: [], fetch_only: [], within: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < SIDES.length; i++) {
        const side = SIDES[(round + i) % SIDES.length] as SideName;
        // The HTTP server answers in this process while a side's process waits for it.
        const { stdout } = await run(node, ["--import", "tsx", self], {
          env: { ...process.env, RETRY_AFTER_ALS_SIDE: side, RETRY_AFTER_ALS_URL: http?.url ?? "" },
        });
        medians[side].push(Number(stdout.trim()));
      }
    }
  } finally {
    await http?.close();
  }
  const none = median(medians.none);
  const out: Record<string, unknown> = {
    node: execFileSync(node, ["--version"], { encoding: "utf8" }).trim(),
    transport: memory ? "memory" : "streamable_http",
    rounds,
    load: [Math.round(loadBefore * 100) / 100, Math.round((loadavg()[0] as number) * 100) / 100],
  };
  for (const side of SIDES) {
    const us = median(medians[side]);
    out[side] = {
      median_us: Math.round(us * 10) / 10,
      extra_us: Math.round((us - none) * 10) / 10,
      ratio_to_none: Math.round((us / none) * 1000) / 1000,
      per_process_us: medians[side].map((m) => Math.round(m * 10) / 10),
    };
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
