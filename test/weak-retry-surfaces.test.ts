/**
 * A retry read from a generic word (a bare "500 Internal Server Error", "fetch failed": rules8's
 * `weakRetry`) stops a mutating write (`uncertain_mutation`) on every surface over a real
 * transport, with and without an idempotency key: the server receives the write once. A read-only
 * tool answered the same words is still retried. The fault server runs over stdio; the count is
 * its own, persisted per tool.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { governTools as aiGovernTools } from "@governor/ai-sdk";
import { createGovernor, type PolicyInput } from "@governor/core";
import { governMcpTools, governTools as lcGovernTools } from "@governor/langchain";
import { governClient } from "@governor/mcp";
import { governedTool, governMcpServer, governorStopOf } from "@governor/openai-agents";
import { type Scenario, stateFileFor, stdioServerParams } from "@governor/testkit";
import { tool as lcTool } from "@langchain/core/tools";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { MCPServerStdio } from "@openai/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { SDKS as AI_SDKS, callTool, say } from "../packages/ai-sdk/src/test-support/sdks.ts";
import {
  runTask,
  SDK_UNSUPPORTED,
  SKIP_REASON,
  stdioFaultServer,
} from "./openai-agents-support.ts";
import { startInProcessHost } from "./proxy-support.ts";

const WORDS = ["500 Internal Server Error", "fetch failed"] as const;

interface Case {
  readonly label: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly words: string;
  /** What the server receives, and how the call ends. */
  readonly received: number;
  readonly ends: "stop" | "ok";
}

const CASES: readonly Case[] = WORDS.flatMap((words) => [
  {
    label: `a keyed write answered "${words}"`,
    tool: "create_note",
    args: { title: "t", body: "b" },
    words,
    received: 1,
    ends: "stop" as const,
  },
  {
    label: `a write without a key answered "${words}"`,
    tool: "append_log",
    args: { line: "hello" },
    words,
    received: 1,
    ends: "stop" as const,
  },
  {
    label: `a read answered "${words}" twice`,
    tool: "search_notes",
    args: { query: "release" },
    words,
    // Two failures, then the scenario's default: a success.
    received: 3,
    ends: "ok" as const,
  },
]);

const RETRY = { attempts: 4, baseDelayMs: 1, maxDelayMs: 2 };
const POLICY: PolicyInput = {
  tools: {
    create_note: { effect: "mutating", idempotency: { honorsKeys: true }, retry: RETRY },
    append_log: { effect: "mutating", retry: RETRY },
    search_notes: { effect: "read_only", retry: RETRY },
  },
};

function scenarioOf(c: Case): Scenario {
  const error = { kind: "error" as const, text: c.words };
  return { [c.tool]: c.ends === "ok" ? [error, error] : [error, error, error, error] };
}

function received(effectsFile: string, tool: string): number {
  const { counters } = JSON.parse(readFileSync(stateFileFor(effectsFile), "utf8")) as {
    counters: Record<string, number>;
  };
  return counters[tool] ?? 0;
}

const dir = mkdtempSync(join(tmpdir(), "governor-weak-retry-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const effectsFile = () => join(dir, `effects-${++n}.jsonl`);

const clients: Client[] = [];
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

/** A client of the fault server over stdio, playing the case's scenario; closed after the file. */
async function stdioClient(name: string, c: Case, effects: string): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" });
  clients.push(client);
  await client.connect(
    new StdioClientTransport(stdioServerParams({ scenario: scenarioOf(c), effectsFile: effects })),
  );
  return client;
}

describe("@governor/mcp: governClient over stdio", () => {
  it.each(CASES)("$label", async (c) => {
    const effects = effectsFile();
    const client = await stdioClient("weak-retry", c, effects);
    const governor = createGovernor(POLICY, { metrics: false });
    const run = governor.startRun();
    const outcome = await governClient(client, { governor, server: "notes" }).callTool(run, {
      name: c.tool,
      arguments: c.args,
      callId: "c1",
    });
    expect(received(effects, c.tool)).toBe(c.received);
    if (c.ends === "stop") {
      expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    } else {
      expect(outcome.kind).toBe("ok");
    }
  });
});

describe("governor proxy (in process, the server over stdio)", () => {
  const policyFile = join(dir, "policy.json");
  writeFileSync(policyFile, JSON.stringify(POLICY));

  it.each(CASES)("$label", async (c) => {
    const effects = effectsFile();
    const params = stdioServerParams({ scenario: scenarioOf(c), effectsFile: effects });
    const host = await startInProcessHost(["--policy", policyFile, "--server", "notes"], {
      command: params.command,
      args: params.args ?? [],
    });
    try {
      const result = (await host.client.callTool({ name: c.tool, arguments: c.args })) as {
        isError?: boolean;
        content: { type: string; text?: string }[];
      };
      expect(received(effects, c.tool)).toBe(c.received);
      if (c.ends === "stop") {
        expect(result.isError).toBe(true);
        expect(result.content.map((b) => b.text ?? "").join("\n")).toMatch(
          /may have (?:been made|happened)|uncertain|not (?:be )?(?:sent|repeated|made) again/i,
        );
      } else {
        expect(result.isError ?? false).toBe(false);
      }
    } finally {
      expect(await host.close(), host.stderr()).toBe(0);
    }
  });
});

describe("LangChain: governMcpTools over stdio", () => {
  it.each(CASES)("$label", async (c) => {
    const effects = effectsFile();
    const client = await stdioClient("weak-retry-lc", c, effects);
    const governor = createGovernor(POLICY, { metrics: false });
    const run = governor.startRun();
    const tools = await governMcpTools(governClient(client, { governor, server: "notes" }), {
      run,
    });
    const tool = tools.find((t) => t.name === c.tool);
    if (tool === undefined) throw new Error(`no tool ${c.tool}`);
    const message = (await tool.invoke({
      type: "tool_call",
      id: "c1",
      name: c.tool,
      args: c.args,
    })) as { status?: string };
    expect(received(effects, c.tool)).toBe(c.received);
    if (c.ends === "stop") {
      expect(message.status).toBe("error");
      expect(run.summary().reason).toBe("uncertain_mutation");
    } else {
      expect(message.status).toBe("success");
      expect(run.ended).toBe(false);
    }
  });
});

describe.skipIf(SDK_UNSUPPORTED)(`OpenAI Agents SDK: governMcpServer (${SKIP_REASON})`, () => {
  const opened: MCPServerStdio[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((server) => server.close()));
  });

  it.each(CASES)(
    "$label",
    async (c) => {
      const effects = effectsFile();
      const server = await stdioFaultServer("notes", opened, {
        scenario: scenarioOf(c),
        effectsFile: effects,
      });
      const governor = createGovernor(POLICY, { metrics: false });
      const run = governor.startRun();
      const task = await runTask(
        { mcpServers: [governMcpServer(server, { governor, run })] },
        (v) => (v.turn === 1 ? { calls: [{ name: c.tool, args: c.args }] } : { say: "done" }),
        { maxTurns: 4 },
      );
      expect(received(effects, c.tool)).toBe(c.received);
      if (c.ends === "stop") {
        expect(governorStopOf(task.error)?.reason).toBe("uncertain_mutation");
      } else {
        expect(task.error).toBeUndefined();
      }
    },
    60_000,
  );
});

/**
 * The local tools' server over real HTTP: each request counted by path; `/500/…` answers a bare
 * 500, `/drop/…` reads the request and destroys the socket (undici's `fetch failed`), the first
 * two times a path is asked for, then 200.
 */
let http: Server;
let base = "";
const seen = new Map<string, number>();
beforeAll(async () => {
  http = createServer((req, res) => {
    const path = req.url ?? "";
    const count = (seen.get(path) ?? 0) + 1;
    seen.set(path, count);
    req.resume();
    req.on("end", () => {
      if (count > 2) {
        res.end("done");
      } else if (path.startsWith("/500/")) {
        res.writeHead(500).end("Internal Server Error");
      } else {
        req.socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => http.close(resolve));
});

interface LocalCase {
  readonly label: string;
  readonly tool: "create_note" | "append_log" | "search_notes";
  readonly path: string;
  readonly received: number;
  readonly ends: "stop" | "ok";
}

let paths = 0;
/** Each case on a path of its own, so counts never mix. */
function localCases(): LocalCase[] {
  return (["500", "drop"] as const).flatMap((how) => {
    const words = how === "500" ? '"500 Internal Server Error"' : '"fetch failed"';
    return [
      // undici's own `fetch failed` carries its cause (`UND_ERR_SOCKET`): a structured signal,
      // not the word alone (docs/mcp.md). A keyed write is sent again under its key, as the
      // idempotency matrix's `lost_after_commit` is; without a key it stops.
      how === "500"
        ? {
            label: `a keyed write answered ${words}`,
            tool: "create_note" as const,
            ends: "stop" as const,
            received: 1,
          }
        : {
            label:
              "a keyed write whose socket dropped (fetch failed, UND_ERR_SOCKET): retried under its key",
            tool: "create_note" as const,
            ends: "ok" as const,
            received: 3,
          },
      {
        label: `a write without a key answered ${words}`,
        tool: "append_log" as const,
        ends: "stop" as const,
        received: 1,
      },
      {
        label: `a read answered ${words} twice`,
        tool: "search_notes" as const,
        ends: "ok" as const,
        received: 3,
      },
    ].map((c) => ({ ...c, path: `/${how}/${++paths}` }));
  });
}

/** The tool's body: one POST to the case's path; a failing status throws as fetch wrappers do. */
function post(path: string) {
  return async (): Promise<string> => {
    const res = await fetch(`${base}${path}`, { method: "POST", body: "{}" });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
    return res.text();
  };
}

const schema = z.object({ title: z.string() });

describe.each(AI_SDKS)("$name: a local tool over HTTP", (entry) => {
  it.each(localCases())("$label", async (c) => {
    const sdk = await entry.load();
    const run = createGovernor(POLICY, { metrics: false }).startRun();
    const model = sdk.scripted([callTool(c.tool, { title: "t" }, "c1"), say("done")]);
    await sdk.generateText({
      model: model.model,
      tools: aiGovernTools(
        { [c.tool]: sdk.tool({ inputSchema: schema, execute: post(c.path) }) },
        { run },
      ),
      stopWhen: sdk.stepCountIs(3),
      prompt: "Do it",
    });
    expect(seen.get(c.path)).toBe(c.received);
    if (c.ends === "stop") expect(run.summary().reason).toBe("uncertain_mutation");
    else expect(run.summary().reason).not.toBe("uncertain_mutation");
  });
});

describe("LangChain: a local tool over HTTP", () => {
  it.each(localCases())("$label", async (c) => {
    const run = createGovernor(POLICY, { metrics: false }).startRun();
    const [tool] = lcGovernTools(
      [lcTool(post(c.path), { name: c.tool, description: "Does it", schema })],
      { run },
    );
    const message = (await tool?.invoke({
      type: "tool_call",
      id: "c1",
      name: c.tool,
      args: { title: "t" },
    })) as { status?: string };
    expect(seen.get(c.path)).toBe(c.received);
    expect(message.status).toBe(c.ends === "stop" ? "error" : "success");
    if (c.ends === "stop") expect(run.summary().reason).toBe("uncertain_mutation");
  });
});

describe.skipIf(SDK_UNSUPPORTED)(
  `OpenAI Agents SDK: a function tool over HTTP (${SKIP_REASON})`,
  () => {
    it.each(localCases())("$label", async (c) => {
      const run = createGovernor(POLICY, { metrics: false }).startRun();
      const tool = governedTool(
        { name: c.tool, description: "Does it", parameters: schema, execute: post(c.path) },
        { run },
      );
      const task = await runTask(
        { tools: [tool] },
        (v) =>
          v.turn === 1 ? { calls: [{ name: c.tool, args: { title: "t" } }] } : { say: "done" },
        { maxTurns: 4 },
      );
      expect(seen.get(c.path)).toBe(c.received);
      if (c.ends === "stop") expect(governorStopOf(task.error)?.reason).toBe("uncertain_mutation");
      else expect(task.error).toBeUndefined();
    });
  },
);
