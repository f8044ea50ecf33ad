import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type CallToolResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { connectInMemory } from "./clients.ts";
import { countDuplicateWrites, readEffects, stateFileFor } from "./effects.ts";
import {
  createFaultServer,
  FAULT_TOOL_NAMES,
  type FaultServerOptions,
  IDEMPOTENCY_META_KEY,
  TOOL_FAILURE_META_KEY,
} from "./fault-server.ts";
import { FaultState, parseScenario } from "./scenario.ts";
import { fixtureSecrets } from "./secrets.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-testkit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function connect(options: FaultServerOptions = {}) {
  const state = options.state ?? new FaultState(options);
  const server = createFaultServer({ ...options, state });
  const { client } = await connectInMemory(server);
  open.push(client);
  return { client, server, state };
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
): Promise<CallToolResult> {
  return (await client.callTool(
    { name, arguments: args, ...(meta !== undefined ? { _meta: meta } : {}) },
    undefined,
    { timeout: 1000 },
  )) as CallToolResult;
}

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe("fault server (McpServer, in memory)", () => {
  it("lists every tool with annotations", async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...FAULT_TOOL_NAMES].sort());
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get("get_note")?.annotations?.readOnlyHint).toBe(true);
    expect(byName.get("set_status")?.annotations?.idempotentHint).toBe(true);
    expect(byName.get("create_note")?.annotations?.readOnlyHint).toBe(false);
    expect(byName.get("typed_note")?.outputSchema).toBeDefined();
  });

  it("get_note: known ids answer, unknown ids list the known ones", async () => {
    const { client } = await connect();
    const ok = await call(client, "get_note", { id: "welcome" });
    expect(ok.isError).toBeUndefined();
    expect(textOf(ok)).toContain("Welcome");
    const missing = await call(client, "get_note", { id: "drafts" });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toBe('No note with id "drafts". Known ids: welcome, release-notes');
  });

  it("search_notes: limit outside 1..50 is the tool's own invalid-argument error", async () => {
    const { client } = await connect();
    expect(textOf(await call(client, "search_notes", { query: "release" }))).toContain(
      "release-notes",
    );
    for (const limit of [0, 51]) {
      const bad = await call(client, "search_notes", { query: "x", limit });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toBe("Invalid argument: limit must be between 1 and 50");
    }
    const wrongType = await call(client, "search_notes", { query: "x", limit: "ten" });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toMatch(/^MCP error -32602: Input validation error: /);
  });

  it("create_note: records effects and deduplicates by key (_meta or argument)", async () => {
    const { client, state } = await connect();
    const meta = { [IDEMPOTENCY_META_KEY]: "k-1" };
    const first = await call(client, "create_note", { title: "a", body: "b" }, meta);
    const again = await call(client, "create_note", { title: "a", body: "b" }, meta);
    expect(textOf(first)).toBe('Created note "a" with id note-1');
    expect(textOf(again)).toBe('Created note "a" with id note-1 (replayed)');
    expect(again.structuredContent).toEqual({ id: "note-1", replayed: true });

    await call(client, "create_note", { title: "c", body: "d", idempotency_key: "k-2" });
    await call(client, "create_note", { title: "c", body: "d", idempotency_key: "k-2" });
    const clash = await call(client, "create_note", { title: "other", body: "d" }, meta);
    expect(clash.isError).toBe(true);
    expect(textOf(clash)).toContain("already used with different arguments");

    await call(client, "create_note", { title: "e", body: "f" });
    await call(client, "create_note", { title: "e", body: "f" });
    const effects = state.effects();
    expect(effects.map((e) => e.key)).toEqual(["k-1", "k-2", undefined, undefined]);
    expect(countDuplicateWrites(effects)).toBe(1);
    expect(textOf(await call(client, "get_note", { id: "note-2" }))).toContain("# c");
  });

  it("append_log does not honor keys; set_status is idempotent", async () => {
    const { client, state } = await connect();
    const meta = { [IDEMPOTENCY_META_KEY]: "same" };
    await call(client, "append_log", { line: "x" }, meta);
    await call(client, "append_log", { line: "x" }, meta);
    expect(countDuplicateWrites(state.effects(), "append_log")).toBe(1);

    await call(client, "set_status", { id: "welcome", status: "archived" });
    await call(client, "set_status", { id: "welcome", status: "archived" });
    expect(state.effects().filter((e) => e.tool === "set_status")).toHaveLength(1);
    const missing = await call(client, "set_status", { id: "nope", status: "draft" });
    expect(textOf(missing)).toBe('No note with id "nope". Known ids: welcome, release-notes');
  });

  it("flaky_fetch: 503 twice, then success", async () => {
    const { client } = await connect();
    for (let i = 0; i < 2; i++) {
      const r = await call(client, "flaky_fetch", { url: "https://example.com" });
      expect(r.isError).toBe(true);
      expect(textOf(r)).toBe("503 Service Unavailable");
      expect(r.structuredContent).toEqual({ error: { status: 503 } });
      expect(r._meta?.[TOOL_FAILURE_META_KEY]).toMatchObject({
        class: "unavailable",
        code: "503",
        retryable: true,
      });
    }
    const ok = await call(client, "flaky_fetch", { url: "https://example.com" });
    expect(ok.isError).toBeUndefined();
    expect(textOf(ok)).toContain("200 OK");
  });

  it("rate_limited: 429 with a retry-after in text, structuredContent and _meta", async () => {
    const { client } = await connect();
    const r = await call(client, "rate_limited");
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe("429 Too Many Requests: retry after 1 seconds");
    expect(r.structuredContent).toEqual({ error: { status: 429, retryAfterMs: 1000 } });
    const failure = r._meta?.[TOOL_FAILURE_META_KEY] as Record<string, unknown>;
    expect(failure).toMatchObject({ class: "rate_limited", code: "429", retryable: true });
    expect(Date.parse(String(failure.retryNotBefore))).toBeGreaterThan(Date.now());
  });

  it("delete_account is denied; transfer_funds refuses above the limit without an effect", async () => {
    const { client, state } = await connect();
    const denied = await call(client, "delete_account", { id: "acct-1" });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/^Permission denied: /);
    const refused = await call(client, "transfer_funds", { amount: 5000 });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe("Transfer refused: amount exceeds the daily limit");
    expect(state.effects()).toEqual([]);
    await call(client, "transfer_funds", { amount: 10 });
    expect(state.effects().map((e) => e.tool)).toEqual(["transfer_funds"]);
  });

  it("crash_with_stack: the raw text holds stack frames, absolute paths and every secret", async () => {
    const { client } = await connect({ secret: "sk-live-custom0000000000000" });
    const r = await call(client, "crash_with_stack");
    const t = textOf(r);
    expect(r.isError).toBe(true);
    expect(t).toMatch(/\n {4}at .+/);
    expect(t).toContain("/fault-server.ts:");
    for (const secret of fixtureSecrets("sk-live-custom0000000000000")) expect(t).toContain(secret);
  });

  it("slow: answers after ms; a client timeout cancels it", async () => {
    const { client } = await connect();
    expect(textOf(await call(client, "slow", { ms: 5 }))).toBe("Slept 5 ms");
    const error = await client
      .callTool({ name: "slow", arguments: { ms: 5000 } }, undefined, { timeout: 50 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32001);
  });

  it("exit_now and write_then_drop close the connection (in memory: the server closes)", async () => {
    const state = new FaultState();
    const { client } = await connect({ state });
    const exit = await call(client, "exit_now").catch((e: unknown) => e);
    expect(exit).toBeInstanceOf(McpError);
    expect((exit as McpError).code).toBe(-32000);

    const { client: c2 } = await connect({ state });
    const meta = { [IDEMPOTENCY_META_KEY]: "w-1" };
    const dropped = await call(c2, "write_then_drop", { title: "t" }, meta).catch((e) => e);
    expect((dropped as McpError).code).toBe(-32000);
    expect(state.effects()).toHaveLength(1);

    const { client: c3 } = await connect({ state });
    const retried = await call(c3, "write_then_drop", { title: "t" }, meta);
    expect(textOf(retried)).toBe('Wrote "t" (write 1) (replayed)');
    expect(state.effects()).toHaveLength(1);
  });

  it("junk_stdout writes through the writeRaw hook and never answers", async () => {
    const lines: string[] = [];
    const { client } = await connect({ writeRaw: (line) => lines.push(line) });
    const error = await client
      .callTool({ name: "junk_stdout", arguments: {} }, undefined, { timeout: 50 })
      .catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32001);
    expect(lines).toHaveLength(1);
    expect(() => JSON.parse(lines[0] ?? "")).toThrow();
  });

  it("typed_note: structured result, and an error whose structuredContent breaks the schema", async () => {
    const { client } = await connect();
    const ok = await call(client, "typed_note", { id: "welcome" });
    expect(ok.structuredContent).toEqual({ id: "welcome", title: "Welcome" });
    const missing = await call(client, "typed_note", { id: "nope" });
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toEqual({ error: { status: 404, code: "not_found" } });
  });
});

describe("scenarios", () => {
  it("error and status steps replace the tool; past the script it behaves normally", async () => {
    const { client, state } = await connect({
      scenario: {
        get_note: [
          { kind: "error", text: "upstream said no", structured: { error: { code: "E1" } } },
          { kind: "status", status: 429, retryAfterSeconds: 2 },
          { kind: "ok" },
        ],
        create_note: [{ kind: "status", status: 504 }],
      },
    });
    const first = await call(client, "get_note", { id: "welcome" });
    expect(textOf(first)).toBe("upstream said no");
    expect(first.structuredContent).toEqual({ error: { code: "E1" } });
    const second = await call(client, "get_note", { id: "welcome" });
    expect(textOf(second)).toBe("429 Too Many Requests: retry after 2 seconds");
    expect(second.structuredContent).toEqual({ error: { status: 429, retryAfterMs: 2000 } });
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
    expect(state.calls("get_note")).toBe(4);

    const timeout = await call(client, "create_note", { title: "x", body: "y" });
    expect(textOf(timeout)).toBe("504 Gateway Timeout");
    expect(state.effects()).toEqual([]);
  });

  it("hang delays the tool and ends with the client's timeout", async () => {
    const { client } = await connect({
      scenario: {
        get_note: [
          { kind: "hang", ms: 30 },
          { kind: "hang", ms: 5000 },
        ],
      },
    });
    const started = Date.now();
    expect((await call(client, "get_note", { id: "welcome" })).isError).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const error = await client
      .callTool({ name: "get_note", arguments: { id: "welcome" } }, undefined, { timeout: 50 })
      .catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32001);
  });

  it("exit, drop_after_commit and malformed steps apply to any tool", async () => {
    const state = new FaultState({
      scenario: {
        get_note: [{ kind: "exit" }],
        create_note: [{ kind: "drop_after_commit" }, { kind: "malformed" }],
      },
    });
    const { client } = await connect({ state });
    const exit = await call(client, "get_note", { id: "welcome" }).catch((e: unknown) => e);
    expect((exit as McpError).code).toBe(-32000);

    const { client: c2 } = await connect({ state });
    const drop = await call(c2, "create_note", { title: "a", body: "b" }).catch((e) => e);
    expect((drop as McpError).code).toBe(-32000);
    expect(state.effects()).toHaveLength(1);

    const { client: c3 } = await connect({ state });
    const malformed = await call(c3, "create_note", { title: "a", body: "b" }).catch((e) => e);
    expect(malformed).toBeInstanceOf(z.core.$ZodError);
    expect(state.effects()).toHaveLength(2);
    expect((await call(c3, "get_note", { id: "welcome" })).isError).toBeUndefined();
  });

  it("counters and effects persist next to the effects file", async () => {
    const effectsFile = join(dir, "persist.jsonl");
    const scenario = { flaky_fetch: [{ kind: "status" as const, status: 503 }] };
    const meta = { [IDEMPOTENCY_META_KEY]: "p-1" };
    const a = await connect({ effectsFile, scenario });
    expect((await call(a.client, "flaky_fetch", { url: "u" })).isError).toBe(true);
    await call(a.client, "create_note", { title: "t", body: "b" }, meta);

    const b = await connect({ effectsFile, scenario });
    expect((await call(b.client, "flaky_fetch", { url: "u" })).isError).toBeUndefined();
    const replay = await call(b.client, "create_note", { title: "t", body: "b" }, meta);
    expect(textOf(replay)).toContain("(replayed)");
    const effects = readEffects(effectsFile);
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ tool: "create_note", key: "p-1", args: { title: "t" } });
    expect(typeof effects[0]?.at).toBe("string");
    expect(JSON.parse(readFileSync(stateFileFor(effectsFile), "utf8"))).toEqual({
      counters: { flaky_fetch: 2, create_note: 2 },
    });
  });

  it("parseScenario validates the step shapes", () => {
    expect(parseScenario('{"get_note":[{"kind":"hang","ms":10}]}')).toEqual({
      get_note: [{ kind: "hang", ms: 10 }],
    });
    expect(() => parseScenario('{"get_note":[{"kind":"explode"}]}')).toThrow();
    expect(() => parseScenario('{"get_note":[{"kind":"status"}]}')).toThrow();
  });
});
