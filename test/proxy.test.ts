/**
 * `governor proxy` end to end: the MCP SDK client acts as the host, the real server is the
 * testkit's fault server (a child process). The proxy runs as a child process (from source) where
 * its process is the point: its stdio, its exit with the host, its HTTP listener; elsewhere it
 * runs in this process on in-memory stdio (startInProcessHost).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { processExists, readEffects, stdioServerParams, waitForExit } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ListResourcesResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../packages/cli/src/main.ts";
import { governor } from "./cli.ts";
import {
  connectHttp,
  type Host,
  serverCalls,
  startDirect,
  startHost,
  startHttpProxy,
  startInProcessHost,
  textOf,
} from "./proxy-support.ts";

const SECRET = "sk-live-proxyTEST0123456789abcdef";

const POLICY = {
  defaults: {
    retry: { baseDelayMs: 1, maxDelayMs: 5, maxHintMs: 500 },
    breaker: { threshold: 100 },
  },
  retryBudget: { reserve: 10_000 },
  servers: {
    notes: {
      trustAnnotations: true,
      tools: {
        create_note: { idempotency: { honorsKeys: true } },
        junk_stdout: { access: "deny" },
      },
    },
  },
};

let dir: string;
let policyFile: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "governor-proxy-"));
  policyFile = join(dir, "policy.json");
  writeFileSync(policyFile, JSON.stringify(POLICY));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function fresh(): { effects: string; events: string } {
  n += 1;
  return { effects: join(dir, `effects-${n}.jsonl`), events: join(dir, `events-${n}.jsonl`) };
}

function faultServer(effects: string, lowlevel = false) {
  const params = stdioServerParams({ effectsFile: effects, secret: SECRET, lowlevel });
  return { command: params.command, args: params.args ?? [] };
}

/**
 * Runs `governor proxy --policy … --server notes` for one host: in this process by default (what
 * it governs), as a child process with `realProcess` (its stdio as a host starts it).
 */
async function withHost<T>(
  effects: string,
  run: (host: Pick<Host, "client" | "logs">) => Promise<T>,
  options: { events?: string; lowlevel?: boolean; realProcess?: boolean } = {},
): Promise<T> {
  const args = ["--policy", policyFile, "--server", "notes"];
  if (options.events !== undefined) args.push("--events", options.events);
  const server = faultServer(effects, options.lowlevel);
  if (options.realProcess) {
    const host = await startHost(args, server);
    try {
      return await run(host);
    } finally {
      await host.close();
    }
  }
  const host = await startInProcessHost(args, server);
  let result: T;
  try {
    result = await run(host);
  } catch (error) {
    await host.close();
    throw error;
  }
  expect(await host.close(), host.stderr()).toBe(0);
  return result;
}

describe("governor proxy over stdio", () => {
  it("says on stderr, not only to the host, that its server could not be started", async () => {
    const toProxy = new PassThrough();
    const fromProxy = new PassThrough();
    let stderr = "";
    const status = main(["proxy", "--", "/nonexistent/governor-server"], {
      stdin: toProxy,
      stdout: fromProxy,
      stderr: new Writable({
        write(chunk: Buffer | string, _encoding, done) {
          stderr += chunk.toString();
          done();
        },
      }),
    });
    const client = new Client({ name: "host", version: "1.0.0" });
    const said = /could not connect to the server: spawn \/nonexistent\/governor-server ENOENT/;
    await expect(client.connect(new StdioServerTransport(fromProxy, toProxy))).rejects.toThrow(
      said,
    );
    expect(stderr).toMatch(said);
    expect(stderr.split("\n").filter(Boolean)).toHaveLength(1);
    await client.close();
    toProxy.end();
    await status;
  });

  it("passes initialize and tools/list through, minus denied tools", async () => {
    const { effects } = fresh();
    const direct = await startDirect(faultServer(effects));
    const directTools = (await direct.listTools()).tools;
    const directInfo = direct.getServerVersion();
    const directCaps = direct.getServerCapabilities();
    await direct.close();
    await withHost(
      effects,
      async ({ client }) => {
        expect(client.getServerVersion()).toEqual(directInfo);
        const caps = client.getServerCapabilities();
        expect(caps?.tools).toEqual({ ...directCaps?.tools, listChanged: true });
        expect(caps?.logging).toEqual({});
        const tools = (await client.listTools()).tools;
        expect(tools.map((t) => t.name)).toEqual(
          directTools.map((t) => t.name).filter((name) => name !== "junk_stdout"),
        );
        // Each tool exactly as the server described it.
        expect(tools).toEqual(directTools.filter((t) => t.name !== "junk_stdout"));
      },
      { realProcess: true },
    );
  });

  it("hands the model a correction, and retries a 503 where the model never sees it", async () => {
    const { effects } = fresh();
    await withHost(effects, async ({ client }) => {
      const missing = await client.callTool({ name: "get_note", arguments: { id: "nope-42" } });
      expect(missing.isError).toBe(true);
      expect(textOf(missing)).toMatch(/No note with id/);
      const fetched = await client.callTool({
        name: "flaky_fetch",
        arguments: { url: "https://example.com/a" },
      });
      expect(fetched.isError).toBeFalsy();
      // Two 503s and the success: three calls reached the server, one reached the host.
      expect(serverCalls(effects, "flaky_fetch")).toBe(3);
    });
  });

  it("never lets a stack trace, a path or a secret reach the model", async () => {
    const { effects } = fresh();
    await withHost(effects, async ({ client }) => {
      const crashed = await client.callTool({ name: "crash_with_stack", arguments: {} });
      const text = textOf(crashed);
      expect(crashed.isError).toBe(true);
      expect(text).not.toContain(SECRET);
      expect(text).not.toMatch(/\bat \S+ \(/);
      expect(text).not.toMatch(/\/(home|usr|opt|srv|var|tmp|root)\//);
    });
  });

  it("stops on a permission error after one call, tells the host, and answers the next calls itself", async () => {
    const { effects } = fresh();
    await withHost(effects, async ({ client, logs }) => {
      const first = await client.callTool({ name: "delete_account", arguments: { id: "acct-1" } });
      expect(first.isError).toBe(true);
      expect(textOf(first)).toMatch(/tell the user/i);
      const again = await client.callTool({ name: "delete_account", arguments: { id: "acct-2" } });
      expect(again.isError).toBe(true);
      expect(textOf(again)).toMatch(/Do not retry/);
      expect(serverCalls(effects, "delete_account")).toBe(1);
      // Other tools still work: the stop is scoped to the tool.
      const note = await client.callTool({ name: "get_note", arguments: { id: "welcome" } });
      expect(note.isError).toBeFalsy();
      await expect.poll(() => logs.length).toBeGreaterThanOrEqual(2);
      expect(logs[0]).toMatchObject({
        level: "warning",
        logger: "governor",
        data: { event: "stopped", tool: "delete_account", reason: "forbidden", scope: "tool" },
      });
      expect(logs[1]).toMatchObject({ data: { event: "blocked", tool: "delete_account" } });
    });
  });

  it("never sends a write again whose answer was lost", async () => {
    const { effects } = fresh();
    await withHost(effects, async ({ client, logs }) => {
      const args = { title: "hello" };
      const first = await client.callTool({ name: "write_then_drop", arguments: args });
      expect(first.isError).toBe(true);
      expect(textOf(first)).toMatch(/may have/i);
      const second = await client.callTool({ name: "write_then_drop", arguments: args });
      expect(second.isError).toBe(true);
      expect(textOf(second)).toMatch(/identical write sent earlier may have taken effect/i);
      expect(readEffects(effects).filter((e) => e.tool === "write_then_drop")).toHaveLength(1);
      await expect.poll(() => logs.length).toBeGreaterThanOrEqual(1);
      expect(logs[0]).toMatchObject({
        data: { event: "stopped", reason: "uncertain_mutation", scope: "call" },
      });
      // The child went away with the write; the proxy started it again for the next call.
      const note = await client.callTool({ name: "get_note", arguments: { id: "welcome" } });
      expect(note.isError).toBeFalsy();
    });
  });

  it("adds the idempotency key to _meta of a tool that honours keys", async () => {
    const { effects } = fresh();
    await withHost(effects, async ({ client }) => {
      const created = await client.callTool({
        name: "create_note",
        arguments: { title: "t", body: "b" },
      });
      expect(created.isError).toBeFalsy();
      const [effect] = readEffects(effects);
      expect(effect?.key).toMatch(/\S{8,}/);
    });
  });

  it("sends a JSON-RPC error of the server to the host, not to the model", async () => {
    const { effects } = fresh();
    await withHost(
      effects,
      async ({ client }) => {
        const call = client.callTool({
          name: "peer_error",
          arguments: { code: -32600, message: "Invalid Request: bad framing" },
        });
        await expect(call).rejects.toBeInstanceOf(McpError);
        await expect(call).rejects.toMatchObject({ code: -32600 });
        // The session goes on.
        const echoed = await client.callTool({ name: "echo", arguments: { text: "still here" } });
        expect(textOf(echoed)).toBe("still here");
      },
      { lowlevel: true },
    );
  });

  it("--timeout past 2^31 - 1 ms is taken as that: a request passed through is not timed out after 1 ms", async () => {
    const { effects } = fresh();
    const host = await startInProcessHost(
      ["--policy", policyFile, "--server", "notes", "--timeout", "600h"],
      faultServer(effects),
    );
    try {
      // Passed through to the real server, which has no resources: its own -32601, not -32001.
      const listed = host.client.request({ method: "resources/list" }, ListResourcesResultSchema);
      await expect(listed).rejects.toMatchObject({ code: -32601 });
      const note = await host.client.callTool({ name: "get_note", arguments: { id: "welcome" } });
      expect(note.isError).toBeFalsy();
    } finally {
      expect(await host.close(), host.stderr()).toBe(0);
    }
  });

  it("writes the library's event log", async () => {
    const { effects, events } = fresh();
    await withHost(
      effects,
      async ({ client }) => {
        await client.callTool({ name: "delete_account", arguments: { id: "acct-1" } });
      },
      { events },
    );
    const lines = readFileSync(events, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.some((e) => e.type === "decision" && e.reason === "forbidden")).toBe(true);
    expect(lines.some((e) => e.type === "run_end" && e.summary.reason === "forbidden")).toBe(true);
    // governor report and governor replay read it as they read the library's.
    const report = await governor(["report", events, "--json"]);
    expect(report.status).toBe(0);
    expect(JSON.parse(report.stdout)).toMatchObject({ runs: 1, stoppedBy: { forbidden: 1 } });
    const lenient = join(dir, "lenient.json");
    writeFileSync(
      lenient,
      JSON.stringify({ ...POLICY, tools: { delete_account: { access: "deny" } } }),
    );
    const replay = await governor(["replay", events, "--policy", lenient, "--json"]);
    expect(replay.status, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ runs: { total: 1 } });
  });

  it("ends the server when the host goes away", async () => {
    const { effects } = fresh();
    const host = await startHost(
      ["--policy", policyFile, "--server", "notes"],
      faultServer(effects),
    );
    await host.client.callTool({ name: "get_note", arguments: { id: "welcome" } });
    const proxyPid = host.transport.pid;
    expect(proxyPid).not.toBeNull();
    const childPids = readFileSync(`/proc/${proxyPid}/task/${proxyPid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    expect(childPids.length).toBeGreaterThan(0);
    await host.close();
    for (const pid of [proxyPid as number, ...childPids]) {
      await waitForExit(pid, 10_000);
      expect(processExists(pid)).toBe(false);
    }
  });
});

describe("governor proxy over Streamable HTTP", () => {
  it("serves hosts on loopback, one governed session each", async () => {
    const { effects } = fresh();
    const proxy = await startHttpProxy(
      ["--policy", policyFile, "--server", "notes"],
      faultServer(effects),
    );
    try {
      expect(proxy.url.hostname).toBe("127.0.0.1");
      const client = await connectHttp(proxy.url);
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain("create_note");
      expect(tools).not.toContain("junk_stdout");
      const fetched = await client.callTool({
        name: "flaky_fetch",
        arguments: { url: "https://example.com" },
      });
      expect(fetched.isError).toBeFalsy();
      const denied = await client.callTool({ name: "delete_account", arguments: { id: "a" } });
      expect(denied.isError).toBe(true);
      expect(serverCalls(effects, "delete_account")).toBe(1);
      await client.close();
    } finally {
      await proxy.stop();
    }
  });
});
