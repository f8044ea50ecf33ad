import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { median } from "./stats.ts";
const server = stdioServerParams();
const sargs = server.args ?? [];
const dir = mkdtempSync(join(tmpdir(), "gp-"));
const policy = join(dir, "policy.json");
writeFileSync(policy, JSON.stringify({ budgets: { calls: 1_000_000 } }));
async function connect(command: string, args: string[], env?: Record<string, string>) {
  const c = new Client({ name: "h", version: "1" });
  await c.connect(new StdioClientTransport({ command, args, cwd: "/work/wt/sqlite", stderr: "ignore", ...(env && { env: { ...process.env as Record<string, string>, ...env } }) }));
  return c;
}
const sides: Record<string, Client> = {
  direct: await connect(server.command, sargs),
  raw: await connect(process.execPath, ["/tmp/sqlprof/raw-proxy.mjs", server.command, ...sargs]),
  lines: await connect(process.execPath, ["/tmp/sqlprof/raw-proxy.mjs", server.command, ...sargs], { MODE: "lines" }),
  governor: await connect(process.execPath, ["packages/cli/dist/bin.js", "proxy", "--policy", policy, "--", server.command, ...sargs]),
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
let n = 0;
for (let round = 0; round < 16; round++) for (const [k, c] of Object.entries(sides)) for (let i = 0; i < 25; i++) {
  const t = process.hrtime.bigint();
  await c.callTool({ name: "search_notes", arguments: { query: `q${n++}` } });
  if (round >= 2) times[k]!.push(Number(process.hrtime.bigint() - t) / 1000);
}
const d = median(times.direct!);
for (const [k, v] of Object.entries(times)) console.log(k.padEnd(9), median(v).toFixed(0).padStart(6), "us", (median(v) / d).toFixed(2));
await Promise.all(Object.values(sides).map((c) => c.close()));
