/**
 * @governor/mcp governing a @modelcontextprotocol/client 2.x `Client`, end to end against the
 * testkit's fault servers over stdio (child processes) and Streamable HTTP: what 2.x changes
 * (SdkError / ProtocolError / SdkHttpError, its own output-schema checks, its paging) reaches the
 * right place; reconnects work with 2.x's `connect`. The four checks for 2.x are in
 * test/mcp-checks.test.ts, its raw behaviour in test/sdk-v2-quirks.test.ts.
 */
import { countDuplicateWrites, readEffects, waitForExit } from "@governor/testkit";
import { Client as V2Client } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import {
  type AnyClient,
  type GovernedOptions,
  modelText,
  type Opened,
  openPerTest,
  type ServerOptions,
  type TransportKind,
} from "./mcp-support.ts";

const openV2 = openPerTest({ sdk: "v2" });
async function open(
  kind: TransportKind,
  server: ServerOptions,
  options: GovernedOptions = {},
): Promise<Opened<AnyClient>> {
  const opened = await openV2(kind, server, options);
  expect(opened.g.client).toBeInstanceOf(V2Client);
  return opened;
}

describe("a 2.x client over stdio", () => {
  it("a crash mid-call on a read-only tool: CONNECTION_CLOSED, reconnect with 2.x's connect, retried once", async () => {
    const { endpoint, g } = await open(
      "stdio",
      { scenario: { get_note: [{ kind: "exit" }] } },
      { reconnect: true },
    );
    const firstPid = endpoint.pids[0];
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(modelText(outcome)).toMatch(/^# Welcome/);
    expect(g.seen.retries.map((r) => [r.failure.local, r.failure.code])).toEqual([
      ["connection_closed", "CONNECTION_CLOSED"],
    ]);
    expect(g.seen.transportErrors.map((e) => e.reason)).toContain("connection_closed");
    expect(endpoint.pids).toHaveLength(2);
    expect(await waitForExit(firstPid ?? 0)).toBe(true);
  });

  it("without reconnect: the crash stops a mutation (uncertain), then Not connected goes to the host, never the model", async () => {
    const { g, effectsFile } = await open("stdio", {
      scenario: { append_log: [{ kind: "drop_after_commit" }] },
    });
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "once" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(run.summary().attempts).toBe(1);
    expect(readEffects(effectsFile).filter((e) => e.tool === "append_log")).toHaveLength(1);

    const next = g.governor.startRun();
    const after = await g.governed.callTool(next, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(after).toMatchObject({ kind: "stop", reason: "session_expired" });
    expect(g.seen.hostErrors.at(-1)).toMatchObject({
      reason: "session_expired",
      channel: "local",
    });
    expect(modelText(after)).not.toContain("Not connected");
  });

  it("the SDK's timer (REQUEST_TIMEOUT with data.timeout): a read-only call is retried, then stops; the call's own signal aborts the attempt", async () => {
    const { g } = await open("stdio", {});
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "slow",
      arguments: { ms: 2000 },
      timeoutMs: 100,
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(g.seen.retries.map((r) => r.failure.local)).toEqual(["timeout", "timeout"]);
    expect(g.seen.retries[0]?.failure.code).toBe("REQUEST_TIMEOUT");
    expect(modelText(outcome)).toContain("Request timed out");

    // The tools are listed by now: the abort hits the call itself.
    const aborted = g.governor.startRun();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const stopped = await g.governed.callTool(aborted, {
      name: "slow",
      arguments: { ms: 5000 },
      signal: controller.signal,
    });
    expect(stopped).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(aborted.summary().attempts).toBe(1);
    expect(aborted.ended).toBe(true);
  });

  it("the adapter's per-attempt signal works with 2.x: run.end() mid-call cancels the request on the wire, a finished call is never cancelled", async () => {
    const { g } = await open("stdio", {});
    const transport = g.client.transport as unknown as {
      send: (message: { method?: string }, options?: unknown) => Promise<void>;
    };
    const sent: string[] = [];
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (typeof message.method === "string") sent.push(message.method);
      return send(message, options);
    };
    const cancelled = () => sent.filter((m) => m === "notifications/cancelled").length;
    const done = g.governor.startRun();
    const ok = await g.governed.callTool(done, { name: "get_note", arguments: { id: "welcome" } });
    expect(ok.kind).toBe("ok");
    done.end();
    expect(cancelled()).toBe(0);

    const run = g.governor.startRun();
    setTimeout(() => run.end(), 200);
    const outcome = await g.governed.callTool(run, { name: "slow", arguments: { ms: 5000 } });
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(cancelled()).toBe(1);
  });

  it("low-level server: unknown tool → switch_tool naming the tools (listed page by page); -32042 → host; output schema → host", async () => {
    const { g } = await open("stdio", { lowlevel: true });
    const run = g.governor.startRun();
    const unknown = await g.governed.callTool(run, { name: "nope", arguments: {} });
    expect(unknown).toMatchObject({ kind: "model", action: "switch_tool" });
    expect(modelText(unknown)).toMatch(/Tools that exist: echo, internal, /);

    const elicitations = [
      { mode: "url", message: "Sign in", url: "https://example.com/a", elicitationId: "e1" },
    ];
    const elicit = await g.governed.callTool(g.governor.startRun(), {
      name: "peer_error",
      arguments: { code: -32042, message: "Auth needed", data: { elicitations } },
    });
    expect(elicit).toMatchObject({ kind: "stop", reason: "elicitation_required" });
    const hostError = g.seen.hostErrors.at(-1);
    expect(hostError).toMatchObject({ channel: "protocol", failureCode: -32042 });
    expect((hostError?.cause as { elicitations?: unknown } | undefined)?.elicitations).toEqual(
      elicitations,
    );
    expect(modelText(elicit)).not.toContain("example.com");

    // The listing above handed the tool's definition to 2.x, which checks the output schema.
    const typed = await g.governed.callTool(g.governor.startRun(), {
      name: "typed_missing",
      arguments: {},
    });
    expect(typed).toMatchObject({ kind: "stop", reason: "malformed_response" });
    expect(g.seen.hostErrors.at(-1)).toMatchObject({
      channel: "local",
      reason: "malformed_response",
    });
    expect(modelText(typed)).not.toContain("output schema");
  });
});

describe("a 2.x client over Streamable HTTP", () => {
  it("an expired session: SdkHttpError 404, one reconnect with 2.x's connect, sent again; a key-honoring write lands once", async () => {
    const { endpoint, g, effectsFile } = await open("http", {}, { reconnect: true });
    const run = g.governor.startRun();
    expect(await endpoint.http?.expireSessions()).toBeGreaterThan(0);
    const outcome = await g.governed.callTool(run, {
      name: "create_note",
      arguments: { title: "t", body: "b" },
      callId: "c1",
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 1 });
    expect(g.seen.hostErrors).toEqual([]);
    const effects = readEffects(effectsFile);
    expect(effects.filter((e) => e.tool === "create_note")).toHaveLength(1);
    expect(countDuplicateWrites(effects)).toBe(0);
    const statuses = endpoint.http?.requests().map((r) => r.status) ?? [];
    expect(statuses).toContain(404);
  });

  it("HTTP 503 with Retry-After on the wire: retried no sooner than the hint, invisibly", async () => {
    const { endpoint, g } = await open("http", {
      httpFaults: [{ status: 503, tool: "get_note", retryAfter: 0.05 }],
    });
    const run = g.governor.startRun();
    const started = Date.now();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(g.seen.retries[0]?.failure).toMatchObject({
      local: "http_status",
      httpStatus: 503,
      retryAfterMs: 50,
    });
    expect(endpoint.http?.requests().filter((r) => r.tool === "get_note")).toHaveLength(2);
  });

  it("a tool listing that never ends: cut at 100 pages (2.x's own walk would throw at 64), the host told", async () => {
    // Time enough for 100 pages even on a loaded machine: the page cap is what ends it here.
    const { endpoint, g } = await open(
      "http",
      { lowlevel: true, endlessToolPages: "fresh" },
      { clientOptions: { requestTimeoutMs: 60_000 } },
    );
    const tools = await g.governed.listTools();
    expect(tools).toHaveLength(100);
    expect(endpoint.http?.requests().filter((r) => r.method === "tools/list")).toHaveLength(100);
    expect(g.seen.transportErrors.map((e) => e.message)).toEqual([
      "tools/list: stopped after 100 pages, the server kept sending a next cursor",
    ]);
  });
});
