/**
 * `proxy_overhead_stdio` of two proxy builds side by side in one process, as
 * bench/proxy-overhead.ts measures it (calls 51 to 350 of a fresh proxy and server, in batches of
 * 25 taking turns with the direct calls), ROUNDS times (default 3) with fresh processes each
 * time: the base build's proxy (GOVERNOR_BASE, a copy made by bench/snapshot-dist.sh) and this
 * checkout's, with the direct calls between them. Prints each round's ratios to the direct call
 * and each proxy's CPU per measured call (µs, from /proc/PID/task/N/schedstat: its main thread's,
 * and all its threads' with V8's compiler and GC threads), then the median of each over the
 * rounds. On a shared machine the wall clock moves by tenths of the ratio from round to round;
 * the two proxies of one round share its load, so compare them round by round.
 *
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/proxy-cold-ab.ts
 *
 * BASE_NODE_ARGS and OURS_NODE_ARGS add node options to either proxy process.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { proxyBehind } from "./proxy-overhead.ts";
import { median } from "./stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BATCH = 25;
const WARMUP = 50;
const SAMPLES = 300;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const base = process.env.GOVERNOR_BASE;
if (base === undefined || base === "") throw new Error("proxy-cold-ab: set GOVERNOR_BASE");
/** The two proxies, each with the variable that adds node options to its process. */
const PROXIES = [
  { name: "base", root: base, env: "BASE_NODE_ARGS" },
  { name: "ours", root: ROOT, env: "OURS_NODE_ARGS" },
] as const;
const nodeArgs = (name: string) => (process.env[name] ?? "").split(" ").filter((arg) => arg !== "");

async function connect(
  command: string,
  args: readonly string[],
): Promise<{ client: Client; pid: number | undefined }> {
  const client = new Client({ name: "bench-host", version: "1.0.0" });
  const transport = new StdioClientTransport({
    command,
    args: [...args],
    cwd: ROOT,
    stderr: "ignore",
  });
  await client.connect(transport);
  return { client, pid: transport.pid ?? undefined };
}

/** CPU ns of a process so far: its main thread's, and all its threads' (each task's schedstat). */
function cpuNs(pid: number | undefined): { main: number; all: number } {
  if (pid === undefined) return { main: 0, all: 0 };
  let main = 0;
  let all = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
      all += ns;
      if (task === String(pid)) main = ns;
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return { main, all };
}

let n = 0;
async function batch(client: Client, times: number[] | undefined): Promise<void> {
  for (let i = 0; i < BATCH; i++) {
    const t = process.hrtime.bigint();
    const result = await client.callTool({ name: "search_notes", arguments: { query: `q${n++}` } });
    times?.push(Number(process.hrtime.bigint() - t) / 1000);
    if (result.isError) throw new Error(`a call failed: ${JSON.stringify(result.content)}`);
  }
}

const round = async () => {
  const server = stdioServerParams();
  const { dir, args } = proxyBehind(server);
  const sides = [
    {
      name: "direct",
      ...(await connect(server.command, server.args ?? [])),
      times: [] as number[],
      main: 0,
      all: 0,
    },
    ...PROXIES.map(async ({ name, root, env }) => ({
      name,
      ...(await connect(process.execPath, [
        ...nodeArgs(env),
        join(root, "packages/cli/dist/bin.js"),
        ...args,
      ])),
      times: [] as number[],
      main: 0,
      all: 0,
    })),
  ];
  const ready = await Promise.all(sides);
  try {
    for (let done = 0; done < WARMUP; done += BATCH)
      for (const side of ready) await batch(side.client, undefined);
    for (let r = 0; (ready[0]?.times.length ?? 0) < SAMPLES; r++) {
      for (let i = 0; i < ready.length; i++) {
        const side = ready[(r + i) % ready.length];
        if (side === undefined) continue;
        const before = cpuNs(side.pid);
        await batch(side.client, side.times);
        const after = cpuNs(side.pid);
        side.main += after.main - before.main;
        side.all += after.all - before.all;
      }
    }
  } finally {
    await Promise.all(ready.map((side) => side.client.close()));
    rmSync(dir, { recursive: true, force: true });
  }
  const direct = median(ready[0]?.times ?? []);
  const figures: Record<string, number> = { direct_us: Math.round(direct) };
  for (const side of ready) {
    figures[side.name] = Math.round((median(side.times) / direct) * 1000) / 1000;
    if (side.name === "direct") continue;
    // The middle process's CPU per measured call, µs: its main thread, and all its threads.
    figures[`${side.name}_cpu_us`] = Math.round(side.main / 1000 / side.times.length);
    figures[`${side.name}_cpu_all_us`] = Math.round(side.all / 1000 / side.times.length);
  }
  return figures;
};

const rounds: Record<string, number>[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const figures = await round();
  rounds.push(figures);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}
const med = (name: string) => median(rounds.map((r) => r[name] ?? Number.NaN));
const summary: Record<string, number> = { rounds: ROUNDS };
for (const name of Object.keys(rounds[0] ?? {})) if (name !== "direct") summary[name] = med(name);
process.stdout.write(`${JSON.stringify(summary)}\n`);
