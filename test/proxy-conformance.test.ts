/**
 * The MCP conformance suite's server scenarios (@modelcontextprotocol/conformance) against a real
 * server (server-everything over Streamable HTTP) directly, and through `governor proxy --listen
 * … --upstream …`: every scenario the server passes must pass through the proxy too.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { proxyCommandLine, ROOT } from "./proxy-support.ts";

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGTERM");
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

/** Starts a child and waits until `ready` matches its stderr or stdout. */
function start(command: string, args: string[], ready: RegExp, env: NodeJS.ProcessEnv = {}) {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env } });
  children.push(child);
  let out = "";
  return new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = ready.exec(out);
      if (match) resolve(match[1] ?? match[0]);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${command} exited with ${code}: ${out}`)));
  });
}

/** Runs the suite's server scenarios against `url`: scenario → failed checks. */
function conformance(url: string): Map<string, { passed: number; failed: number }> {
  const cli = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
  const result = spawnSync(process.execPath, [cli, "server", "--url", url], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 240_000,
  });
  const scenarios = new Map<string, { passed: number; failed: number }>();
  for (const match of result.stdout.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gm)) {
    scenarios.set(match[1] as string, { passed: Number(match[2]), failed: Number(match[3]) });
  }
  if (scenarios.size === 0)
    throw new Error(`no scenario results:\n${result.stdout}\n${result.stderr}`);
  return scenarios;
}

describe("MCP conformance server scenarios through governor proxy", () => {
  it("passes every scenario the real server passes", async () => {
    const port = await freePort();
    await start(
      process.execPath,
      [
        join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "streamableHttp",
      ],
      /listening on port|Server listening|port \d+/i,
      { PORT: String(port) },
    );
    const upstream = `http://127.0.0.1:${port}/mcp`;
    const line = proxyCommandLine(["--listen", "0", "--upstream", upstream], { command: "" });
    // No child command: drop the trailing "--" and empty command.
    const proxyUrl = await start(
      line.command,
      line.args.slice(0, -2),
      /listening on (http:\/\/\S+)/,
    );

    const direct = conformance(upstream);
    const proxied = conformance(proxyUrl);
    const passedDirect = [...direct].filter(([, r]) => r.failed === 0).map(([name]) => name);
    // The suite ran for real: server-everything passes a dozen of its scenarios.
    expect(passedDirect.length).toBeGreaterThanOrEqual(10);
    for (const name of passedDirect) {
      expect(proxied.get(name), name).toMatchObject({ failed: 0 });
    }
    // The proxy refuses non-loopback Host headers on loopback, whatever the server does.
    expect(proxied.get("dns-rebinding-protection")).toMatchObject({ failed: 0 });
  }, 600_000);
});
