/**
 * Added latency of `governor proxy` per successful tool call over stdio: a host (the SDK client)
 * calling the testkit's fault server directly, against the same host calling it through the
 * proxy (a child process that starts the server as its own child). Direct and proxied calls
 * alternate in batches in one process after a warm-up; each figure is the median per call.
 *
 *   node --import tsx bench/proxy-overhead.ts   # the built packages (pnpm build first)
 *   node --conditions=source --import tsx bench/proxy-overhead.ts   # the sources
 *   GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/proxy-overhead.ts
 *
 * With GOVERNOR_BASE (a copy made by bench/snapshot-dist.sh), the proxy run is that build's: run
 * it in turn with the plain command for a before and after under the same load
 * (bench/proxy-cpu.ts runs both in one process).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { median } from "./stats.ts";

export interface ProxyOverheadFigure {
  /** Median µs per call through the proxy. */
  readonly proxiedMedianUs: number;
  /** Median µs per direct call. */
  readonly directMedianUs: number;
  /** proxied / direct. */
  readonly ratio: number;
  readonly samples: number;
}

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BATCH = 25;

async function connect(command: string, args: readonly string[]): Promise<Client> {
  const client = new Client({ name: "bench-host", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({ command, args: [...args], cwd: ROOT, stderr: "ignore" }),
  );
  return client;
}

/**
 * The `governor proxy` arguments (after its bin) that run `server` behind the proxy with its
 * default settings, except a calls budget big enough for a whole measurement, written to a policy
 * file in `dir` (the caller removes it).
 */
export function proxyBehind(server: ReturnType<typeof stdioServerParams>): {
  readonly dir: string;
  readonly args: string[];
} {
  const dir = mkdtempSync(join(tmpdir(), "governor-bench-proxy-"));
  const policy = join(dir, "policy.json");
  writeFileSync(policy, JSON.stringify({ budgets: { calls: 1_000_000 } }));
  return {
    dir,
    args: ["proxy", "--policy", policy, "--", server.command, ...(server.args ?? [])],
  };
}

/**
 * Measures `samples` calls per side of a read-only tool (`search_notes`) with the proxy's default
 * settings, except a calls budget big enough for the whole measurement (the tool is undeclared,
 * so each call is keyed as a write would be).
 */
export async function benchProxyOverhead(
  samples = 300,
  warmup = 50,
  /** The checkout whose built proxy runs (a base build's copy for a before and after). */
  build = ROOT,
): Promise<ProxyOverheadFigure> {
  const server = stdioServerParams();
  const serverArgs = server.args ?? [];
  // The proxy runs as the bench does: the built packages (`pnpm bench` builds them first), or the
  // sources through tsx when the bench itself runs with `--conditions=source`.
  const fromSource = import.meta.resolve("@governor/core").includes("/src/");
  const bin = fromSource
    ? ["--conditions=source", "--import", import.meta.resolve("tsx"), "packages/cli/src/bin.ts"]
    : [join(build, "packages/cli/dist/bin.js")];
  const { dir, args } = proxyBehind(server);
  const direct = await connect(server.command, serverArgs);
  const proxied = await connect(process.execPath, [...bin, ...args]);
  const times = { direct: [] as number[], proxied: [] as number[] };
  let n = 0;
  const batch = async (side: "direct" | "proxied", record: boolean) => {
    const client = side === "direct" ? direct : proxied;
    for (let i = 0; i < BATCH; i++) {
      const t = process.hrtime.bigint();
      const result = await client.callTool({
        name: "search_notes",
        arguments: { query: `q${n++}` },
      });
      if (record) times[side].push(Number(process.hrtime.bigint() - t) / 1000);
      if (result.isError)
        throw new Error(`bench: a ${side} call failed: ${JSON.stringify(result.content)}`);
    }
  };
  try {
    for (let done = 0; done < warmup; done += BATCH) {
      await batch("direct", false);
      await batch("proxied", false);
    }
    for (let round = 0; times.direct.length < samples; round++) {
      const [first, second] =
        round % 2 === 0 ? (["direct", "proxied"] as const) : (["proxied", "direct"] as const);
      await batch(first, true);
      await batch(second, true);
    }
  } finally {
    await Promise.all([direct.close(), proxied.close()]);
    rmSync(dir, { recursive: true, force: true });
  }
  const proxiedMedianUs = median(times.proxied);
  const directMedianUs = median(times.direct);
  return {
    proxiedMedianUs: Math.round(proxiedMedianUs * 100) / 100,
    directMedianUs: Math.round(directMedianUs * 100) / 100,
    ratio: Math.round((proxiedMedianUs / directMedianUs) * 1000) / 1000,
    samples: times.direct.length,
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const base = process.env.GOVERNOR_BASE;
  const build = base === undefined || base === "" ? ROOT : base;
  process.stdout.write(`${JSON.stringify(await benchProxyOverhead(300, 50, build), null, 2)}\n`);
}
