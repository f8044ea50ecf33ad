import { getEventListeners, setMaxListeners } from "node:events";
import {
  createGovernor,
  type GovernorOptions,
  type HostError,
  type PolicyInput,
} from "@governor/core";
import {
  connectInMemory,
  createFaultServer,
  createLowLevelServer,
  IDEMPOTENCY_META_KEY,
} from "@governor/testkit";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type GovernClientOptions, governClient, toModelResult } from "./client.ts";

const FAST: PolicyInput["defaults"] = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function setup(
  server: McpServer | Server,
  policy: PolicyInput = {},
  options: Partial<GovernClientOptions> & { governor?: GovernorOptions } = {},
) {
  const { client, clientTransport } = await connectInMemory(server);
  clients.push(client);
  const hostErrors: HostError[] = [];
  const governor = createGovernor(
    { ...policy, defaults: { ...FAST, ...policy.defaults }, retryBudget: { reserve: 1000 } },
    { metrics: false, onHostError: (e) => void hostErrors.push(e), ...options.governor },
  );
  const governed = governClient(client, { governor, server: "notes", ...options });
  return { client, clientTransport, governor, governed, hostErrors };
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe("governClient over the in-memory transport", () => {
  it("passes a success through untouched; toModelResult gives the tool's result", async () => {
    const { governed, governor } = await setup(createFaultServer());
    const outcome = await governed.callTool(governor.startRun(), {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 1, replayed: false });
    const result = toModelResult(outcome);
    expect(result.isError).toBeUndefined();
    expect(text(result)).toMatch(/^# Welcome/);
  });

  it("#1943: an isError result whose structuredContent breaks the output schema reaches classification (after listTools)", async () => {
    const { governed, governor, client } = await setup(createFaultServer());
    await governed.listTools();
    // The plain SDK throws the error result away and rejects with -32602 instead.
    await expect(
      client.callTool({ name: "typed_note", arguments: { id: "nope" } }),
    ).rejects.toMatchObject({
      code: -32602,
    });
    const outcome = await governed.callTool(governor.startRun(), {
      name: "typed_note",
      arguments: { id: "nope" },
    });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "not_found",
    });
    expect(text(toModelResult(outcome))).toContain(
      'No note with id "nope". Known ids: welcome, release-notes',
    );
    // A success is still checked against the output schema.
    const ok = await governed.callTool(governor.startRun(), {
      name: "typed_note",
      arguments: { id: "welcome" },
    });
    expect(ok).toMatchObject({
      kind: "ok",
      value: { structuredContent: { id: "welcome", title: "Welcome" } },
    });
  });

  it("a success that breaks its output schema (missing or wrong structuredContent) goes to the host as malformed_response", async () => {
    const { governed, governor, hostErrors } = await setup(createLowLevelServer());
    await governed.listTools();
    for (const name of ["typed_missing", "typed_wrong"]) {
      const outcome = await governed.callTool(governor.startRun(), { name, arguments: {} });
      expect(outcome).toMatchObject({ kind: "stop", reason: "malformed_response" });
      expect(text(toModelResult(outcome))).not.toMatch(/schema|structured/i);
    }
    expect(hostErrors.map((e) => [e.reason, e.channel])).toEqual([
      ["malformed_response", "local"],
      ["malformed_response", "local"],
    ]);
  });

  it("gives the SDK a signal of its own per attempt: the run's signal keeps no listener (the raw SDK keeps N)", async () => {
    const { governed, governor, client } = await setup(createFaultServer());
    const runSignal = new AbortController();
    const run = governor.startRun({ signal: runSignal.signal });
    for (let i = 0; i < 20; i++) {
      const outcome = await governed.callTool(run, {
        name: "search_notes",
        arguments: { query: `q${i}` },
      });
      expect(outcome.kind).toBe("ok");
    }
    expect(getEventListeners(runSignal.signal, "abort")).toHaveLength(0);

    const raw = new AbortController();
    // The leak this test shows: 20 listeners on one signal, which Node would report as a
    // MaxListenersExceededWarning at the 11th in every test run.
    setMaxListeners(20, raw.signal);
    for (let i = 0; i < 20; i++) {
      await client.callTool({ name: "search_notes", arguments: { query: `q${i}` } }, undefined, {
        signal: raw.signal,
      });
    }
    expect(getEventListeners(raw.signal, "abort")).toHaveLength(20);
  });

  it("sends no notifications/cancelled for finished calls when the run is aborted later", async () => {
    const { governed, governor, clientTransport } = await setup(createFaultServer());
    const sent = tapMethods(clientTransport);
    const runSignal = new AbortController();
    const run = governor.startRun({ signal: runSignal.signal });
    for (let i = 0; i < 5; i++)
      await governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
    runSignal.abort();
    expect(sent.filter((m) => m === "notifications/cancelled")).toEqual([]);
  });

  it("an abort of the run mid-call: stop aborted, and the request is cancelled on the wire", async () => {
    const { governed, governor, clientTransport } = await setup(createFaultServer());
    const sent = tapMethods(clientTransport);
    const runSignal = new AbortController();
    const run = governor.startRun({ signal: runSignal.signal });
    setTimeout(() => runSignal.abort(), 30);
    const outcome = await governed.callTool(run, { name: "slow", arguments: { ms: 5000 } });
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(sent).toContain("notifications/cancelled");
  });

  it("the attempt timeout comes from the run's remaining time", async () => {
    const { governed, governor } = await setup(createFaultServer(), {
      tools: { slow: { effect: "read_only", retry: { attempts: 1 } } },
    });
    const run = governor.startRun({ deadline: Date.now() + 80 });
    const started = Date.now();
    const outcome = await governed.callTool(run, { name: "slow", arguments: { ms: 5000 } });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(outcome.kind).toBe("stop");
  });

  it("observe-only: a run past its deadline does not cut the call (it timed out after 1 ms)", async () => {
    const { governed, governor } = await setup(createFaultServer(), {
      observeOnly: true,
      tools: { slow: { effect: "read_only" } },
    });
    const run = governor.startRun({ deadline: Date.now() + 20 });
    // Near the deadline, and past it: the call runs as it would without Governor.
    const near = await governed.callTool(run, { name: "slow", arguments: { ms: 60 } });
    expect(near.kind).toBe("ok");
    const past = await governed.callTool(run, { name: "slow", arguments: { ms: 30 } });
    expect(past.kind).toBe("ok");
    expect(toModelResult(past).isError).toBeUndefined();
  });

  it("a limit past 2^31 - 1 ms is taken as that, not fired after 1 ms (observe-only: no deadline lowers it)", async () => {
    const { governed, governor } = await setup(
      createFaultServer(),
      { observeOnly: true, tools: { slow: { effect: "read_only" } } },
      { requestTimeoutMs: 3e9 },
    );
    const outcome = await governed.callTool(governor.startRun(), {
      name: "slow",
      arguments: { ms: 30 },
    });
    expect(outcome.kind).toBe("ok");
    const percall = await governed.callTool(governor.startRun(), {
      name: "slow",
      arguments: { ms: 30 },
      timeoutMs: Number.POSITIVE_INFINITY,
    });
    expect(percall.kind).toBe("ok");
  });

  it("refuses a limit that is not a positive number, naming it (NaN, 0 or -5 timed every call out at once)", async () => {
    const { client } = await connectInMemory(createFaultServer());
    clients.push(client);
    const governor = createGovernor({}, { metrics: false });
    for (const bad of [Number.NaN, 0, -5, "60000"]) {
      for (const field of ["requestTimeoutMs", "reconnectTimeoutMs"]) {
        expect(() => governClient(client, { governor, [field]: bad })).toThrow(
          expect.objectContaining({
            code: "invalid_options",
            message: expect.stringContaining(`${field} must be a positive number of ms`),
          }),
        );
      }
      await expect(
        governClient(client, { governor }).callTool(governor.startRun(), {
          name: "slow",
          arguments: { ms: 1 },
          timeoutMs: bad as number,
        }),
      ).rejects.toMatchObject({
        code: "invalid_options",
        message: expect.stringContaining("callTool(slow): timeoutMs must be a positive number"),
      });
    }
    expect(() => governClient(client, {} as GovernClientOptions)).toThrow(/governor must be/);
    expect(() =>
      governClient(client, { governor, reconnect: "yes" as never as () => Promise<void> }),
    ).toThrow(/reconnect must be a function/);
  });

  it("sends the idempotency key in _meta, the same on every attempt", async () => {
    const { governed, governor } = await setup(
      createFaultServer({
        scenario: {
          create_note: [{ kind: "hang", ms: 500 }, { kind: "ok" }],
        },
      }),
      { tools: { create_note: { effect: "mutating", idempotency: { honorsKeys: true } } } },
    );
    const keys: unknown[] = [];
    const request = governed.client.request.bind(governed.client);
    governed.client.request = ((
      req: { params?: { _meta?: Record<string, unknown> } },
      ...rest: unknown[]
    ) => {
      keys.push(req.params?._meta?.[IDEMPOTENCY_META_KEY]);
      return (request as (...args: unknown[]) => unknown)(req, ...rest);
    }) as typeof governed.client.request;
    const outcome = await governed.callTool(governor.startRun(), {
      name: "create_note",
      arguments: { title: "a", body: "b" },
      timeoutMs: 50,
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^gk_/);
    expect(keys[1]).toBe(keys[0]);
  });
});

describe("a replay hands the host a tool result, never undefined", () => {
  const policy = (replay: boolean): PolicyInput => ({
    tools: { create_note: { effect: "mutating", idempotency: { honorsKeys: true, replay } } },
  });
  const call = { name: "create_note", arguments: { title: "t", body: "b" }, callId: "c1" };

  async function twice(replay: boolean) {
    const { governed, governor, client } = await setup(createFaultServer(), policy(replay));
    let sent = 0;
    const request = client.request.bind(client);
    client.request = ((...args: unknown[]) => {
      sent += 1;
      return (request as (...a: unknown[]) => unknown)(...args);
    }) as typeof client.request;
    const scope = { idempotencyScope: "job-1" };
    const first = await governed.callTool(governor.startRun(scope), call);
    const again = await governed.callTool(governor.startRun(scope), call);
    return { first, again, sent };
  }

  it("a result the ledger kept is replayed as it was", async () => {
    const { first, again, sent } = await twice(true);
    expect(sent).toBe(1);
    expect(again).toMatchObject({ kind: "ok", replayed: true });
    expect(toModelResult(again)).toEqual(toModelResult(first));
  });

  it("with replay: false, a fixed text says the call was done; the write is not repeated", async () => {
    const { again, sent } = await twice(false);
    expect(sent).toBe(1);
    expect(again).toMatchObject({ kind: "ok", replayed: true });
    const result = toModelResult(again);
    expect(result.isError).toBeUndefined();
    expect(text(result)).toBe(
      "create_note: this call already succeeded before; it was not run again, and its result was not kept.",
    );
  });

  it("a key a host settled by hand (no result) replays as the same text", async () => {
    const { governed, governor, client } = await setup(createFaultServer(), policy(true));
    const keys: unknown[] = [];
    const request = client.request.bind(client);
    client.request = ((
      req: { params?: { _meta?: Record<string, unknown> } },
      ...rest: unknown[]
    ) => {
      keys.push(req.params?._meta?.[IDEMPOTENCY_META_KEY]);
      return (request as (...a: unknown[]) => unknown)(req, ...rest);
    }) as typeof client.request;
    const scope = { idempotencyScope: "job-2" };
    expect(await governed.callTool(governor.startRun(scope), call)).toMatchObject({ kind: "ok" });
    expect(keys).toHaveLength(1);
    await governor.settle(keys[0] as string, "succeeded");
    const again = await governed.callTool(governor.startRun(scope), call);
    expect(keys).toHaveLength(1);
    expect(again).toMatchObject({ kind: "ok", replayed: true });
    expect(text(toModelResult(again))).toMatch(/^create_note: this call already succeeded before/);
  });
});

describe("listTools", () => {
  it("hides tools the policy denies and tools whose breaker is open", async () => {
    const { governed, governor } = await setup(createFaultServer(), {
      tools: {
        delete_account: { access: "deny" },
        slow: {
          effect: "read_only",
          retry: { attempts: 1 },
          breaker: { threshold: 1, cooldownMs: 60_000 },
        },
      },
    });
    const before = (await governed.listTools()).map((t) => t.name);
    expect(before).not.toContain("delete_account");
    expect(before).toContain("slow");
    const run = governor.startRun();
    await governed.callTool(run, { name: "slow", arguments: { ms: 5000 }, timeoutMs: 20 });
    const after = (await governed.listTools()).map((t) => t.name);
    expect(after).not.toContain("slow");
    expect(after).toContain("get_note");
    // Calling it anyway: switch_tool, nothing sent.
    const outcome = await governed.callTool(governor.startRun(), {
      name: "slow",
      arguments: { ms: 1 },
    });
    expect(outcome).toMatchObject({ kind: "model", action: "switch_tool", reason: "circuit_open" });
    // A denied tool called anyway: switch_tool too.
    const denied = await governed.callTool(governor.startRun(), {
      name: "delete_account",
      arguments: { id: "a" },
    });
    expect(denied).toMatchObject({
      kind: "model",
      action: "switch_tool",
      reason: "denied_by_policy",
    });
  });
});

describe("effects from annotations", () => {
  // slow is annotated readOnlyHint: a timeout is retried only when that hint is believed.
  const timeoutOutcome = async (policy: PolicyInput, list = true) => {
    const { governed, governor } = await setup(createFaultServer(), policy);
    if (list) await governed.listTools();
    const run = governor.startRun();
    const outcome = await governed.callTool(run, {
      name: "slow",
      arguments: { ms: 5000 },
      timeoutMs: 20,
    });
    return { outcome, attempts: run.summary().attempts };
  };

  it("an untrusted server's annotations are ignored: unannotated by policy = mutating, no retry", async () => {
    const { outcome, attempts } = await timeoutOutcome({});
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(attempts).toBe(1);
  });

  it("a trusted server's readOnlyHint makes the timeout retryable (listed lazily if needed)", async () => {
    for (const list of [true, false]) {
      const { outcome, attempts } = await timeoutOutcome(
        { servers: { notes: { trustAnnotations: true } } },
        list,
      );
      expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
      expect(attempts).toBe(3);
    }
  });

  it("the lazy listing for trusted annotations ends with the run: its abort, its end, its deadline", async () => {
    for (const how of ["abort", "end", "deadline"] as const) {
      const { client } = await connectInMemory(createLowLevelServer({ toolPageDelayMs: 5_000 }));
      clients.push(client);
      const governor = createGovernor(
        {
          servers: { s: { trustAnnotations: true } },
          budgets: { wallTimeMs: how === "deadline" ? 100 : 60_000 },
        },
        { metrics: false },
      );
      const governed = governClient(client, { governor, server: "s" });
      const ac = new AbortController();
      const run = governor.startRun({ signal: ac.signal });
      const started = Date.now();
      const pending = governed.callTool(run, { name: "echo", arguments: { text: "x" } });
      setTimeout(() => {
        if (how === "abort") ac.abort();
        if (how === "end") run.end();
      }, 50);
      const outcome = await pending;
      // The page answers after 5 s: the call must not wait for it.
      expect(Date.now() - started, how).toBeLessThan(2_000);
      expect(outcome.kind, how).toBe("stop");
    }
  });

  it("the policy wins over a trusted annotation", async () => {
    const { outcome, attempts } = await timeoutOutcome({
      servers: { notes: { trustAnnotations: true, tools: { slow: { effect: "mutating" } } } },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(attempts).toBe(1);
  });
});

describe("transport errors", () => {
  it("forwards onerror no call claims to onTransportError, and chains the previous handlers", async () => {
    const forwarded: HostError[] = [];
    const previous: Error[] = [];
    const { client } = await connectInMemory(createFaultServer());
    clients.push(client);
    client.onerror = (e) => void previous.push(e);
    governClient(client, {
      governor: createGovernor({}, { metrics: false }),
      onTransportError: (e) => void forwarded.push(e),
    });
    const junk = new SyntaxError("Unexpected token 'h'");
    client.onerror?.(junk);
    await new Promise((resolve) => setImmediate(resolve));
    expect(previous).toEqual([junk]);
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]).toMatchObject({
      reason: "transport_error",
      channel: "local",
      cause: junk,
    });
  });

  it("issue 9.4: an onerror report reaches onTransportError redacted with the policy's settings (its own patterns too)", async () => {
    const forwarded: HostError[] = [];
    const { client } = await connectInMemory(createFaultServer());
    clients.push(client);
    governClient(client, {
      governor: createGovernor({ redaction: { patterns: ["ACCT-\\d{6}"] } }, { metrics: false }),
      onTransportError: (e) => void forwarded.push(e),
    });
    const leak = new Error(
      `Unexpected token 'A', "Authorization: Bearer abcdefghijklmnopqrstuvwx.yz" for ACCT-123456 is not valid JSON`,
    );
    client.onerror?.(leak);
    await new Promise((resolve) => setImmediate(resolve));
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]?.message).toMatch(/^Unexpected token 'A', /);
    expect(forwarded[0]?.message).not.toMatch(/abcdefghijklmnop|ACCT-123456/);
    expect(forwarded[0]?.cause).toBe(leak);
  });

  it("reports a connection that closes with calls in flight", async () => {
    const forwarded: HostError[] = [];
    const { governed, governor } = await setup(
      createFaultServer(),
      {
        tools: { exit_now: { effect: "read_only", retry: { attempts: 1 } } },
      },
      { onTransportError: (e) => void forwarded.push(e) },
    );
    const outcome = await governed.callTool(governor.startRun(), {
      name: "exit_now",
      arguments: {},
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(forwarded.map((e) => e.reason)).toEqual(["connection_closed"]);
  });
});

/** Records the method of every message the client sends on the wire. */
function tapMethods(transport: InMemoryTransport): string[] {
  const sent: string[] = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if ("method" in message) sent.push(message.method);
    return send(message, options);
  };
  return sent;
}

describe("tool names a server lists reach the model redacted and capped (issue 8.9, sibling)", () => {
  it("an unknown-tool text names the tools that exist, without a secret or a 10 KB name", async () => {
    const { Server: LowLevel } = await import("@modelcontextprotocol/sdk/server/index.js");
    const { CallToolRequestSchema, ListToolsRequestSchema } = await import(
      "@modelcontextprotocol/sdk/types.js"
    );
    const secret = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    const server = new LowLevel({ name: "odd", version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: "echo", inputSchema: { type: "object" } },
        { name: `leak_${secret}`, inputSchema: { type: "object" } },
        { name: "x".repeat(10_000), inputSchema: { type: "object" } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (req) => ({
      content: [{ type: "text", text: `MCP error -32602: Tool ${req.params.name} not found` }],
      isError: true,
    }));
    const { governed, governor } = await setup(server);
    const outcome = await governed.callTool(governor.startRun(), { name: "nope", arguments: {} });
    expect(outcome).toMatchObject({ kind: "model", reason: "unknown_tool" });
    const said = outcome.kind === "ok" ? "" : outcome.result.content[0].text;
    expect(said).toContain("Tools that exist: echo, ");
    expect(said).not.toContain(secret);
    expect(said.length).toBeLessThan(2_000);
  });

  it("the tool names are redacted with the policy's own settings (its patterns, emails)", async () => {
    const { Server: LowLevel } = await import("@modelcontextprotocol/sdk/server/index.js");
    const { CallToolRequestSchema, ListToolsRequestSchema } = await import(
      "@modelcontextprotocol/sdk/types.js"
    );
    const server = new LowLevel({ name: "odd", version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: "echo", inputSchema: { type: "object" } },
        { name: "tenant_ACME-4411_export", inputSchema: { type: "object" } },
        { name: "mail_ops@acme.example", inputSchema: { type: "object" } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (req) => ({
      content: [{ type: "text", text: `MCP error -32602: Tool ${req.params.name} not found` }],
      isError: true,
    }));
    const { governed, governor } = await setup(server, {
      redaction: { patterns: ["ACME-[0-9]+"], emails: true },
    });
    const outcome = await governed.callTool(governor.startRun(), {
      name: "nope",
      arguments: {},
    });
    expect(outcome).toMatchObject({ kind: "model", reason: "unknown_tool" });
    const said = outcome.kind === "ok" ? "" : outcome.result.content[0].text;
    expect(said).toContain("Tools that exist: echo, ");
    expect(said).not.toMatch(/ACME-[0-9]|ops@acme/);
  });
});

describe("issue 12.3: the tool's input schema from tools/list weighs the failure (real SDK)", () => {
  function limitServer(): { server: McpServer; calls: () => number } {
    const server = new McpServer({ name: "limits", version: "1.0.0" });
    let calls = 0;
    server.registerTool(
      "run_query",
      {
        inputSchema: { sql: z.string(), region: z.string() },
        annotations: { readOnlyHint: true },
      },
      async () => {
        calls += 1;
        return {
          // Read as a timeout on its own; the schema shows `region` is an argument of the call.
          // (`Value for 'timeout' must be at most 60` and `region must be one of eu, us` are read
          // as arguments by the rules alone.)
          content: [{ type: "text", text: "Upstream timed out; region should be eu or us" }],
          isError: true,
        };
      },
    );
    return { server, calls: () => calls };
  }

  it("after listTools, a text naming a schema property with what is wrong is a correction, sent once", async () => {
    const { server, calls } = limitServer();
    const { governed, governor } = await setup(server, {
      tools: { run_query: { effect: "read_only" } },
    });
    await governed.listTools();
    const outcome = await governed.callTool(governor.startRun(), {
      name: "run_query",
      arguments: { sql: "select 1", region: "ap" },
    });
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(calls()).toBe(1);
  });

  it("without a tool list, the text alone decides (a timeout is retried)", async () => {
    const { server, calls } = limitServer();
    const { governed, governor } = await setup(server, {
      tools: { run_query: { effect: "read_only" } },
    });
    const outcome = await governed.callTool(governor.startRun(), {
      name: "run_query",
      arguments: { sql: "select 1", region: "ap" },
    });
    expect(outcome.kind).not.toBe("ok");
    expect(calls()).toBe(3);
  });
});

describe("issue 12: a low-level Server sends what its tool threw as JSON-RPC -32603 (real SDK)", () => {
  function oldNotesServer(): Server {
    const server = new Server(
      { name: "old-notes", version: "0.1.0" },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: "get_note",
          inputSchema: { type: "object", properties: { id: { type: "string" } } },
          annotations: { readOnlyHint: true },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const id = String(request.params.arguments?.id ?? "");
      if (id === "crash") throw new Error("Note registry not found at /srv/notes/index.db");
      // A plain Error: the SDK answers it with code -32603 and this message.
      throw new Error(`No note with id "${id}"`);
    });
    return server;
  }

  it("a -32603 whose text names the model's argument and reads as not found goes to the model", async () => {
    const { governed, governor, hostErrors, client } = await setup(oldNotesServer());
    await expect(
      client.callTool({ name: "get_note", arguments: { id: "drafts" } }),
    ).rejects.toMatchObject({ code: -32603 });
    const run = governor.startRun();
    const outcome = await governed.callTool(run, { name: "get_note", arguments: { id: "drafts" } });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "not_found",
    });
    expect(text(toModelResult(outcome))).toContain('No note with id "drafts"');
    expect(hostErrors).toEqual([]);
    expect(run.ended).toBe(false);
  });

  it("any other -32603 stays the host's: nothing of it reaches the model", async () => {
    const { governed, governor, hostErrors } = await setup(oldNotesServer());
    const outcome = await governed.callTool(governor.startRun(), {
      name: "get_note",
      arguments: { id: "crash" },
    });
    expect(outcome.kind).toBe("stop");
    expect(hostErrors).toHaveLength(1);
    expect(hostErrors[0]).toMatchObject({ reason: "protocol_error", failureCode: -32603 });
    expect(text(toModelResult(outcome))).not.toContain("/srv/notes");
  });
});
