/**
 * The proxy's cost per successful tool call over stdio, side by side in one process: a host (the
 * SDK client) calling the testkit's fault server directly, through a proxy that only passes the
 * bytes on (a child piping stdin and stdout to the server: the floor of one more stdio hop),
 * through `governor proxy` of this checkout, and, with GOVERNOR_BASE set, through the
 * `governor proxy` of a base build. The sides take turns in batches, the order rotating each
 * round. For each side it prints the median µs per call, its ratio to the direct call (as
 * `proxy_overhead_stdio` in bench/proxy-overhead.ts), and the CPU (user + system, from
 * /proc/PID/stat) of the middle process per call, summed over all measured batches.
 *
 *   pnpm build && node --import tsx bench/proxy-cpu.ts
 *   pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base   # at the base commit
 *   GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/proxy-cpu.ts
 *
 * CALLS (default 4000) sets the measured calls per side; PROFILE=DIR writes a V8 CPU profile of
 * this checkout's proxy process into DIR (`node --cpu-prof`; summarize it with
 * `node bench/cpu-profile-summary.mjs DIR/*.cpuprofile`); PROXY_NODE_ARGS adds node options to
 * that process (e.g. `--perf-basic-prof` for `perf record -p PID`, the pids printed on stderr).
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { proxyBehind } from "./proxy-overhead.ts";
import { median } from "./stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CALLS = Number(process.env.CALLS ?? 4000);
const BATCH = 100;
const WARMUP = 500;
const TICK_US = 1_000_000 / 100; // USER_HZ, as Linux reports /proc/PID/stat

/** A child that pipes its stdin to the server and the server's stdout back: bytes, no parsing. */
const PASS_THROUGH = `
const { spawn } = require("node:child_process");
const [command, ...args] = process.argv.slice(1);
const child = spawn(command, args, { stdio: ["pipe", "pipe", "ignore"] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
process.stdin.on("end", () => child.kill());
child.on("exit", () => process.exit(0));
`;

interface Side {
  readonly name: string;
  readonly client: Client;
  /** The middle process (undefined for the direct side). */
  readonly pid: number | undefined;
  readonly times: number[];
  ticks: number;
  switches: number;
  calls: number;
}

/** Voluntary and involuntary context switches of the process's main thread so far. */
function switches(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  let count = 0;
  for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) {
    count += Number(match[1]);
  }
  return count;
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

async function connect(name: string, command: string, args: readonly string[]): Promise<Side> {
  const client = new Client({ name: "bench-host", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command,
    args: [...args],
    cwd: ROOT,
    stderr: "ignore",
  });
  await client.connect(transport);
  return {
    name,
    client,
    pid: name === "direct" ? undefined : (transport.pid ?? undefined),
    times: [],
    ticks: 0,
    switches: 0,
    calls: 0,
  };
}

let n = 0;
async function batch(side: Side, record: boolean): Promise<void> {
  const before = side.pid === undefined ? 0 : cpuTicks(side.pid);
  const switchesBefore = side.pid === undefined ? 0 : switches(side.pid);
  for (let i = 0; i < BATCH; i++) {
    const t = process.hrtime.bigint();
    const result = await side.client.callTool({
      name: "search_notes",
      arguments: { query: `q${n++}` },
    });
    if (record) side.times.push(Number(process.hrtime.bigint() - t) / 1000);
    if (result.isError) {
      throw new Error(`bench: a ${side.name} call failed: ${JSON.stringify(result.content)}`);
    }
  }
  if (record) {
    if (side.pid !== undefined) {
      side.ticks += cpuTicks(side.pid) - before;
      side.switches += switches(side.pid) - switchesBefore;
    }
    side.calls += BATCH;
  }
}

const server = stdioServerParams();
const serverArgs = server.args ?? [];
// As bench/proxy-overhead.ts: the proxy's defaults, with a calls budget for the whole measurement.
const { dir, args } = proxyBehind(server);
const proxyArgs = (root: string) => [join(root, "packages/cli/dist/bin.js"), ...args];
const profile = process.env.PROFILE;
const nodeArgs = (process.env.PROXY_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
const base = process.env.GOVERNOR_BASE;
const directSide = await connect("direct", server.command, serverArgs);
const sides: Side[] = [
  directSide,
  await connect("pass_through", process.execPath, [
    "-e",
    PASS_THROUGH,
    server.command,
    ...serverArgs,
  ]),
  await connect("ours", process.execPath, [
    ...(profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profile}`]),
    ...nodeArgs,
    ...proxyArgs(ROOT),
  ]),
  ...(base === undefined || base === ""
    ? []
    : [await connect("base", process.execPath, proxyArgs(base))]),
];
process.stderr.write(
  `proxy-cpu: pids ${sides.map((side) => `${side.name}=${side.pid ?? process.pid}`).join(" ")}\n`,
);
try {
  for (let done = 0; done < WARMUP; done += BATCH)
    for (const side of sides) await batch(side, false);
  for (let round = 0; directSide.calls < CALLS; round++) {
    for (let i = 0; i < sides.length; i++) {
      await batch(sides[(round + i) % sides.length] as Side, true);
    }
  }
} finally {
  await Promise.all(sides.map((side) => side.client.close()));
  rmSync(dir, { recursive: true, force: true });
}
const direct = median(directSide.times);
const out: Record<string, unknown> = {};
for (const side of sides) {
  const us = median(side.times);
  out[side.name] = {
    median_us: Math.round(us * 10) / 10,
    ratio_to_direct: Math.round((us / direct) * 1000) / 1000,
    ...(side.pid !== undefined && {
      cpu_us_per_call: Math.round((side.ticks * TICK_US) / side.calls),
      switches_per_call: Math.round((side.switches / side.calls) * 100) / 100,
    }),
    calls: side.calls,
  };
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
