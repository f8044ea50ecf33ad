/**
 * The proxy's own work per successful tool call, without the stdio hops: `createProxyServer` of
 * the built cli (and, with GOVERNOR_BASE, of a base build side by side in one process) between a
 * host that writes its tools/call lines into the proxy's `HostStdioTransport` (in-memory streams)
 * and an upstream transport in this process that answers each request a macrotask later
 * (`setImmediate`, as a read from the server's pipe comes), the answer serialized and parsed as
 * on the wire. The sides take turns in runs of 500 calls, the order alternating each round; each
 * figure is the median µs per call. What it leaves out: the syscalls (bench/proxy-cpu.ts measures
 * those, with the real server).
 *
 *   pnpm build && node --expose-gc --import tsx bench/proxy-path.ts
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --expose-gc --import tsx bench/proxy-path.ts
 *
 * ROUNDS (default 30) sets the measured rounds per side; PROFILE=1 runs this checkout's side
 * alone, for `node --cpu-prof`. Each side's bytes allocated per call (V8's sampling heap profiler,
 * bench/heap-sampler.ts, over 5000 calls) are printed too; ALLOC=N also lists its N largest sites.
 */
import { PassThrough } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Governor } from "@governor/core";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { sampleAllocations, totalBytes } from "./heap-sampler.ts";
import { median } from "./stats.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 30);
const CALLS = 500;

interface Build {
  createProxyServer(options: { governor: Governor; upstream: () => Transport }): {
    connect(t: Transport, o?: { checked?: boolean }): Promise<void>;
    close(): Promise<void>;
  };
  HostStdioTransport: new (stdin: PassThrough, stdout: PassThrough) => Transport;
  createGovernor(policy: unknown): Governor;
}

async function load(root: string): Promise<Build> {
  const at = (path: string) => import(pathToFileURL(`${root}/${path}`).href);
  const [server, host, cliMain] = await Promise.all([
    at("packages/cli/dist/proxy/server.js"),
    at("packages/cli/dist/proxy/host-stdio.js"),
    // The core the cli build imports (the base's own copy for the base).
    at("packages/cli/node_modules/@governor/core/dist/index.js"),
  ]);
  return {
    createProxyServer: server.createProxyServer,
    HostStdioTransport: host.HostStdioTransport,
    createGovernor: cliMain.createGovernor,
  };
}

/** The real server, in this process: answers a macrotask later, through JSON text both ways. */
class Upstream implements Transport {
  onmessage?: Transport["onmessage"];
  onclose?: Transport["onclose"];
  onerror?: Transport["onerror"];
  async start(): Promise<void> {}
  async close(): Promise<void> {
    this.onclose?.();
  }
  async send(message: JSONRPCMessage): Promise<void> {
    const sent = JSON.parse(`${JSON.stringify(message)}\n`) as {
      id?: string | number;
      method?: string;
      params?: { protocolVersion?: string; arguments?: { query?: string } };
    };
    if (sent.id === undefined || sent.method === undefined) return;
    let result: unknown;
    if (sent.method === "initialize") {
      result = {
        protocolVersion: sent.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "upstream", version: "1.0.0" },
      };
    } else if (sent.method === "tools/call") {
      result = {
        content: [{ type: "text", text: `No note matches ${sent.params?.arguments?.query}.` }],
      };
    } else {
      result = {};
    }
    const line = JSON.stringify({ result, jsonrpc: "2.0", id: sent.id });
    setImmediate(() => this.onmessage?.(JSON.parse(line) as JSONRPCMessage));
  }
}

interface Side {
  readonly name: string;
  call(n: number): Promise<void>;
  close(): Promise<void>;
  readonly times: number[];
}

async function side(name: string, root: string): Promise<Side> {
  const build = await load(root);
  const governor = build.createGovernor({ budgets: { calls: 100_000_000 } });
  const proxy = build.createProxyServer({ governor, upstream: () => new Upstream() });
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  stdin.setEncoding("utf8");
  await proxy.connect(new build.HostStdioTransport(stdin, stdout), { checked: true });
  const waiting = new Map<number, (line: string) => void>();
  let rest = "";
  stdout.setEncoding("utf8");
  stdout.on("data", (chunk: string) => {
    rest += chunk;
    for (let end = rest.indexOf("\n"); end !== -1; end = rest.indexOf("\n")) {
      const line = rest.slice(0, end);
      rest = rest.slice(end + 1);
      const { id } = JSON.parse(line) as { id: number };
      waiting.get(id)?.(line);
      waiting.delete(id);
    }
  });
  let nextId = 0;
  const request = (method: string, params: unknown): Promise<string> =>
    new Promise((resolve) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "bench-host", version: "1.0.0" },
  });
  stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  return {
    name,
    times: [],
    async call(n) {
      const line = await request("tools/call", {
        name: "search_notes",
        arguments: { query: `q${n}` },
      });
      if (!line.includes('"result"') || line.includes('"isError":true')) {
        throw new Error(`bench: a ${name} call failed: ${line}`);
      }
    },
    async close() {
      stdin.end();
      await proxy.close();
    },
  };
}

const base = process.env.GOVERNOR_BASE;
const sides: Side[] = [await side("ours", ROOT)];
if (base !== undefined && base !== "" && process.env.PROFILE !== "1")
  sides.push(await side("base", base));
let n = 0;
for (let round = 0; round < ROUNDS + 4; round++) {
  const order = round % 2 === 0 ? sides : [...sides].reverse();
  for (const s of order) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) await s.call(n++);
    const us = Number(process.hrtime.bigint() - t) / 1000 / CALLS;
    if (round >= 4) s.times.push(us);
  }
}
const ALLOC_CALLS = 5000;
const sites = new Map<string, Map<string, number>>();
for (const s of sides) {
  sites.set(
    s.name,
    await sampleAllocations(async () => {
      for (let i = 0; i < ALLOC_CALLS; i++) await s.call(n++);
    }),
  );
}
for (const s of sides) await s.close();
const out: Record<string, unknown> = {};
const top = Number(process.env.ALLOC ?? 0);
for (const s of sides) {
  const bySite = sites.get(s.name) ?? new Map<string, number>();
  out[s.name] = {
    us_per_call: Math.round(median(s.times) * 100) / 100,
    bytes_per_call: Math.round(totalBytes(bySite) / ALLOC_CALLS),
    ...(top > 0 && {
      sites: Object.fromEntries(
        [...bySite]
          .sort((a, b) => b[1] - a[1])
          .slice(0, top)
          .map(([site, bytes]) => [site, Math.round(bytes / ALLOC_CALLS)]),
      ),
    }),
  };
}
const [ours, theirs] = sides;
if (ours !== undefined && theirs !== undefined) {
  out.ratio = Math.round((median(ours.times) / median(theirs.times)) * 1000) / 1000;
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
