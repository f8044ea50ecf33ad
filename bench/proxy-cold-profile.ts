/**
 * A V8 CPU profile of `governor proxy` over the calls `proxy_overhead_stdio` measures (calls 51
 * to 350 of a fresh proxy and server): the cold path, before V8 has optimized it. The proxy makes
 * CALLS calls (default 350); when call 51 starts, the time on the profile's clock is written to
 * DIR/from-us.txt, so that the summary can leave out the start and the first 50 calls:
 *
 *   pnpm build && node --import tsx bench/proxy-cold-profile.ts DIR
 *   FROM_US=$(cat DIR/from-us.txt) CALLS=300 node bench/cpu-profile-summary.mjs DIR/*.cpuprofile
 *
 * DIR `-` writes no profile; PROXY_NODE_ARGS adds node options to the proxy process (e.g.
 * `--log-function-events --logfile=FILE --no-logfile-per-isolate`: what V8 parses and compiles).
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { proxyBehind } from "./proxy-overhead.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CALLS = Number(process.env.CALLS ?? 350);
const out = process.argv[2];
if (out === undefined) throw new Error("usage: proxy-cold-profile.ts DIR");
if (out !== "-") mkdirSync(out, { recursive: true });
const build = process.env.GOVERNOR_BASE || ROOT;
const { dir, args } = proxyBehind(stdioServerParams());
const nodeArgs = (process.env.PROXY_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
const client = new Client({ name: "bench-host", version: "1.0.0" });
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [
      ...(out === "-" ? [] : ["--cpu-prof", `--cpu-prof-dir=${out}`]),
      ...nodeArgs,
      join(build, "packages/cli/dist/bin.js"),
      ...args,
    ],
    cwd: ROOT,
    stderr: "ignore",
  }),
);
try {
  for (let i = 0; i < CALLS; i++) {
    // Where the measured calls start, on the profile's clock (the monotonic one, in µs), for
    // FROM_US of bench/cpu-profile-summary.mjs.
    if (i === 50) {
      const fromUs = String(process.hrtime.bigint() / 1000n);
      if (out !== "-") writeFileSync(join(out, "from-us.txt"), `${fromUs}\n`);
      process.stdout.write(`FROM_US=${fromUs}\n`);
    }
    const result = await client.callTool({ name: "search_notes", arguments: { query: `q${i}` } });
    if (result.isError) throw new Error(`a call failed: ${JSON.stringify(result.content)}`);
  }
} finally {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
}
