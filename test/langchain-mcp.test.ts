/**
 * @governor/langchain with a real MCP server: the testkit's fault server (and the low-level one)
 * over stdio, langchain's prebuilt agent (`createAgent`) and a scripted chat model of LangChain's
 * own model interface. Each case also runs without Governor, through @langchain/mcp-adapters'
 * `loadMcpTools` over a plain client (what a LangChain user gets alone): what the model saw then,
 * how many calls reached the server, how the run ended (docs/langchain.md's table).
 */
import { createGovernor, type HostError, type Run } from "@governor/core";
import { GovernorStopError, governMcpTools } from "@governor/langchain";
import { governorMiddleware } from "@governor/langchain/agent";
import { governClient } from "@governor/mcp";
import { fixtureSecrets, readEffects } from "@governor/testkit";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { loadMcpTools } from "@langchain/mcp-adapters";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Endpoint,
  type Governed,
  governed,
  SERVER,
  shutdown,
  startEndpoint,
  tempDir,
  testPolicy,
} from "./mcp-support.ts";
import { type Ended, runScriptedAgent } from "./support/langchain-agent.ts";
import { call, type ScriptedTurn, say } from "./support/scripted-chat-model.ts";

function runAgent(
  tools: StructuredToolInterface[],
  script: readonly ScriptedTurn[],
  run?: Run,
): Promise<Ended> {
  return runScriptedAgent(script, tools, run ? [governorMiddleware(run)] : [], "Go");
}

/** What the model read in tool messages, over its turns. */
const shown = (ended: Ended) => ended.model.toolMessages().map((m) => String(m.content));

/** One server process behind a governed client and one behind a plain client (the baseline). */
function servers(options: Parameters<typeof startEndpoint>[1]) {
  const endpoints: Endpoint[] = [];
  let g: Governed | undefined;
  let plain: Client | undefined;
  beforeAll(async () => {
    endpoints.push(await startEndpoint("stdio", options), await startEndpoint("stdio", options));
    const client = new Client({ name: "langchain-alone", version: "0.1.0" });
    // Two server processes, spawned side by side.
    [g] = await Promise.all([
      governed(endpoints[0] as Endpoint),
      (endpoints[1] as Endpoint).connect(client),
    ]);
    plain = client;
  });
  afterAll(async () => {
    const left = await shutdown(
      [g?.client, plain].filter((c) => c !== undefined),
      endpoints,
    );
    expect(left).toEqual([]);
  });
  return {
    /** A new run and its governed tools. */
    async governed() {
      if (!g) throw new Error("servers: used outside a test");
      g.reset();
      const run = g.governor.startRun();
      return { run, tools: await governMcpTools(g.governed, { run }), seen: g.seen };
    },
    /** The same server's tools through a governor in observe-only mode (a new run each time). */
    observed() {
      if (!plain) throw new Error("servers: used outside a test");
      const hostErrors: HostError[] = [];
      const governor = createGovernor(testPolicy({ observeOnly: true }), {
        metrics: false,
        onHostError: (error) => void hostErrors.push(error),
      });
      const run = governor.startRun();
      const client = governClient(plain, { governor, server: SERVER, requestTimeoutMs: 2000 });
      return {
        run,
        hostErrors,
        tools: governMcpTools(client, { run, onHostError: (e) => void hostErrors.push(e) }),
      };
    },
    /** The same server's tools through @langchain/mcp-adapters, no Governor. */
    alone: () => {
      if (!plain) throw new Error("servers: used outside a test");
      return loadMcpTools(SERVER, plain);
    },
  };
}

describe("governMcpTools with createAgent, fault server over stdio", () => {
  const notes = servers({});

  it("a wrong id: Governor's correction, then the right call", async () => {
    const script = [
      call("get_note", { id: "drafts" }, "c1"),
      call("get_note", { id: "welcome" }, "c2"),
      say("done"),
    ];
    const { run, tools } = await notes.governed();
    const ended = await runAgent(tools, script, run);
    expect(ended.error).toBeUndefined();
    const [first, second] = ended.model.toolMessages();
    expect(first?.status).toBe("error");
    expect(String(first?.content)).toMatch(/^get_note: No note with id "drafts"\. Known ids: /);
    expect(String(first?.content)).toContain("Use an identifier that exists");
    expect(second?.status).toBe("success");
    expect(String(second?.content)).toContain("Welcome to the notes service");
    expect(run.summary()).toMatchObject({ calls: 2, failures: 1 });

    // Alone: the adapter's ToolException text and ToolNode's "Please fix your mistakes."
    const alone = await runAgent(await notes.alone(), script);
    expect(shown(alone)[0]).toBe(
      `ToolException: MCP tool 'get_note' on server '${SERVER}' returned an error: No note with id "drafts". Known ids: welcome, release-notes\n Please fix your mistakes.`,
    );
  });

  it("a 503 twice: retried inside one call; alone, the model sees each 503 and calls again", async () => {
    const fetch = (id: string) => call("flaky_fetch", { url: "https://example.com" }, id);
    const { run, tools } = await notes.governed();
    const ended = await runAgent(tools, [fetch("c1"), say("done")], run);
    expect(ended.error).toBeUndefined();
    expect(shown(ended)).toEqual(["200 OK: fetched https://example.com (attempt 3)"]);
    expect(JSON.stringify(ended.model.turns)).not.toMatch(/Service Unavailable|\b503\b/); // not a random id that holds "503"
    expect(run.summary()).toMatchObject({ calls: 1, attempts: 3, retries: 2 });

    const alone = await runAgent(await notes.alone(), [
      fetch("c1"),
      fetch("c2"),
      fetch("c3"),
      say("done"),
    ]);
    expect(shown(alone).map((t) => t.includes("503 Service Unavailable"))).toEqual([
      true,
      true,
      false,
    ]);
    expect(alone.model.turns).toHaveLength(4);
  });

  it("permission denied: one call, then GovernorStopError; alone, the loop goes on", async () => {
    const script = [
      call("delete_account", { id: "acct-1" }, "c1"),
      call("delete_account", { id: "acct-1" }, "c2"),
      call("delete_account", { id: "acct-2" }, "c3"),
      say("gave up"),
    ];
    const { run, tools } = await notes.governed();
    const ended = await runAgent(tools, script, run);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect(ended.error).toMatchObject({
      reason: "forbidden",
      personResolvable: true,
      tool: "delete_account",
    });
    expect(ended.model.turns).toHaveLength(1);
    expect(run.summary()).toMatchObject({ calls: 1, attempts: 1 });
    const last = ended.messages.at(-1);
    expect(String(last?.content)).toMatch(
      /^delete_account: Permission denied: .*The run stops here\.$/,
    );

    const alone = await runAgent(await notes.alone(), script);
    expect(alone.error).toBeUndefined();
    expect(alone.model.turns).toHaveLength(4);
    expect(shown(alone).every((t) => t.includes("Permission denied"))).toBe(true);
  });

  it("seed checks: a crash with a stack, paths and secrets reaches the model redacted", async () => {
    const script = [call("crash_with_stack", {}, "c1"), say("done")];
    const { run, tools } = await notes.governed();
    const ended = await runAgent(tools, script, run);
    const seen = JSON.stringify(ended.messages);
    for (const secret of fixtureSecrets()) expect(seen).not.toContain(secret);
    expect(seen).not.toMatch(/\.(js|ts):\d+/);
    expect(seen).not.toContain("/srv/");
    expect(String(ended.messages.at(-1)?.content)).toContain("[token]");
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect(ended.error).toMatchObject({ reason: "retries_exhausted" });
    expect(run.summary().lastFailure?.reason).toBe("connection_refused");

    // Alone, every secret, the server's paths and its stack reach the model.
    const alone = await runAgent(await notes.alone(), script);
    const raw = shown(alone).join("\n");
    for (const secret of fixtureSecrets()) expect(raw).toContain(secret);
    expect(raw).toMatch(/\n {4}at .*fault-server\.ts:\d+:\d+/);
  });
});

describe("governMcpTools: a JSON-RPC error goes to the host (low-level server over stdio)", () => {
  const low = servers({ lowlevel: true });

  it("the host gets the HostError; the model a fixed text; alone, the model gets the error", async () => {
    const script = [call("internal", {}, "c1"), say("done")];
    const { run, tools, seen } = await low.governed();
    const ended = await runAgent(tools, script, run);
    expect(seen.hostErrors).toHaveLength(1);
    expect(seen.hostErrors[0]).toMatchObject({ reason: "protocol_error", failureCode: -32603 });
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect((ended.error as GovernorStopError).hostError).toBe(seen.hostErrors[0]);
    expect(shown(ended)).toEqual([]);
    const last = ended.messages.at(-1);
    expect(String(last?.content)).toBe(
      "internal: the call could not be completed. The host has been told; nothing in this conversation can fix it. The run stops here.",
    );
    expect(JSON.stringify(ended.messages)).not.toContain("-32603");

    const alone = await runAgent(await low.alone(), script);
    expect(shown(alone)[0]).toMatch(
      /^ToolException: Error calling tool internal: McpError: MCP error -32603: /,
    );
    expect(alone.error).toBeUndefined();
    expect(alone.model.turns).toHaveLength(2);
  });

  it("observe-only: the client's error reaches the graph as without Governor; the run goes on", async () => {
    // Observe-only enforces nothing: run.call hands back what the MCP client threw. Taken for
    // trouble in Governor, the model read "The run stops here." and the host got an
    // unexpected_error, from a run that went on.
    const script = [call("internal", {}, "c1"), say("done")];
    const { run, hostErrors, tools } = low.observed();
    const ended = await runAgent(await tools, script, run);
    expect(hostErrors).toEqual([]);
    expect(ended.error).toBeUndefined();
    expect(ended.model.turns).toHaveLength(2);
    expect(shown(ended)[0]).toMatch(/MCP error -32603: /);
    expect(shown(ended)[0]).not.toMatch(/The run stops here/);
    expect(run.end().reason).toBe("completed");
  });
});

describe("governMcpTools: an uncertain write (the answer is lost after the commit)", () => {
  const dir = tempDir();
  const effects = { governed: dir.file("governed.jsonl"), alone: dir.file("alone.jsonl") };
  const endpoints: Endpoint[] = [];
  const clients: Client[] = [];
  afterAll(async () => {
    expect(await shutdown(clients, endpoints)).toEqual([]);
    dir.cleanup();
  });

  it("stops with the key the server received in _meta; alone, the model is told to fix it", async () => {
    const endpoint = await startEndpoint("stdio", { effectsFile: effects.governed });
    endpoints.push(endpoint);
    // The server does not honor keys here: a lost answer leaves the write uncertain.
    const g = await governed(endpoint, {
      policy: {
        servers: {
          [SERVER]: {
            trustAnnotations: true,
            tools: { write_then_drop: { idempotency: { honorsKeys: false } } },
          },
        },
      },
    });
    clients.push(g.client);
    const run = g.governor.startRun();
    const script = [
      call("write_then_drop", { title: "hello" }, "c1"),
      call("write_then_drop", { title: "hello" }, "c2"),
      say("done"),
    ];
    const ended = await runAgent(await governMcpTools(g.governed, { run }), script, run);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    const stop = ended.error as GovernorStopError;
    expect(stop.reason).toBe("uncertain_mutation");
    expect(stop.idempotencyKey).toMatch(/^gk_[0-9a-f]{32}$/);
    const written = readEffects(effects.governed);
    expect(written).toHaveLength(1);
    expect(written[0]?.key).toBe(stop.idempotencyKey);
    expect(ended.model.turns).toHaveLength(1);
    expect(String(ended.messages.at(-1)?.content)).toContain("Do not repeat it");

    const plainEndpoint = await startEndpoint("stdio", { effectsFile: effects.alone });
    endpoints.push(plainEndpoint);
    const plain = new Client({ name: "langchain-alone", version: "0.1.0" });
    await plainEndpoint.connect(plain);
    clients.push(plain);
    const alone = await runAgent(await loadMcpTools(SERVER, plain), script);
    expect(alone.error).toBeUndefined();
    expect(shown(alone)[0]).toMatch(/Connection closed\n Please fix your mistakes\.$/);
    expect(shown(alone)[1]).toMatch(/Not connected\n Please fix your mistakes\.$/);
    expect(readEffects(effects.alone)).toHaveLength(1);
  });
});
