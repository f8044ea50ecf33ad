/**
 * A server that goes away mid-call: the stdio child process exits, the HTTP connection drops, the
 * HTTP session expires. Safe calls resume (with `reconnect` where the transport needs one); unsafe
 * ones are never replayed blindly; without `reconnect` the host hears of it.
 */
import { countDuplicateWrites, readEffects, waitForExit } from "@governor/testkit";
import { describe, expect, it } from "vitest";
import { type Endpoint, type Governed, modelText, openPerTest, TRANSPORTS } from "./mcp-support.ts";

const open = openPerTest();

describe.each(TRANSPORTS)("going away over %s", (kind) => {
  it("a read-only call whose server goes away mid-call resumes (after a reconnect on stdio)", async () => {
    const { endpoint, g } = await open(
      kind,
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
    expect(g.seen.retries.map((r) => r.failure.local)).toEqual(["connection_closed"]);
    expect(g.seen.hostErrors).toEqual([]);
    if (kind === "stdio") {
      // The crash is reported to the host, and a new child serves the rest of the run.
      expect(g.seen.transportErrors.map((e) => e.reason)).toContain("connection_closed");
      expect(endpoint.pids).toHaveLength(2);
      expect(await waitForExit(firstPid ?? 0)).toBe(true);
    }
    const next = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "release-notes" },
    });
    expect(next).toMatchObject({ kind: "ok", attempts: 1 });
  });

  it("a mutating call whose response is lost after the commit is not replayed: uncertain_mutation, one effect", async () => {
    const { endpoint, g, effectsFile } = await open(
      kind,
      { scenario: { append_log: [{ kind: "drop_after_commit" }] } },
      { reconnect: true },
    );
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "once" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(run.summary().attempts).toBe(1);
    expect(readEffects(effectsFile).filter((e) => e.tool === "append_log")).toHaveLength(1);
    // Not replayed after the reconnect either: the next call is a new one.
    if (kind === "stdio") expect(endpoint.pids).toHaveLength(1);
  });

  it("write_then_drop with a key-honoring tool: retried with the same key, exactly one effect", async () => {
    const { g, effectsFile } = await open(kind, {}, { reconnect: true });
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "write_then_drop",
      arguments: { title: "report" },
      callId: "call-1",
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(modelText(outcome)).toBe('Wrote "report" (write 1) (replayed)');
    const effects = readEffects(effectsFile);
    expect(effects).toHaveLength(1);
    expect(effects[0]?.key).toMatch(/^gk_/);
    expect(countDuplicateWrites(effects)).toBe(0);
    expect(g.seen.retries).toHaveLength(1);
    expect(g.seen.retries[0]?.decision.certainty).toBe("unknown");
  });
});

describe("stdio: a crashed server without reconnect", () => {
  it("is reported to the host (onHostError, session_expired), the model gets nothing of it", async () => {
    const { endpoint, g } = await open("stdio", { scenario: { get_note: [{ kind: "exit" }] } });
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    // The closed connection is retried (read-only); the retry finds no connection: the host's turn.
    expect(outcome).toMatchObject({ kind: "stop", reason: "session_expired" });
    expect(g.seen.hostErrors.map((e) => [e.reason, e.message])).toEqual([
      ["session_expired", "get_note: Not connected"],
    ]);
    expect(g.seen.transportErrors.map((e) => e.reason)).toEqual(["connection_closed"]);
    expect(modelText(outcome)).not.toMatch(/Not connected|-32000/);
    expect(await waitForExit(endpoint.pids[0] ?? 0)).toBe(true);
  });

  it("the host can reconnect itself from onHostError and ask for a retry of a safe call", async () => {
    let endpointRef: Endpoint | undefined;
    let gRef: Governed | undefined;
    const { endpoint, g } = await open(
      "stdio",
      { scenario: { get_note: [{ kind: "exit" }] } },
      {
        governorOptions: {
          metrics: false,
          onHostError: async (error, ctx) => {
            if (error.reason !== "session_expired" || !ctx.safeToRepeat || !endpointRef || !gRef)
              return undefined;
            await endpointRef.connect(gRef.client);
            return { action: "retry" };
          },
        },
      },
    );
    endpointRef = endpoint;
    gRef = g;
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 3 });
    expect(endpoint.pids).toHaveLength(2);
  });
});

describe("HTTP: an expired session", () => {
  it("with reconnect: a new session is opened and the call is sent again (nothing was executed)", async () => {
    const { endpoint, g } = await open("http", {}, { reconnect: true });
    const run = g.governor.startRun();
    expect(
      await g.governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } }),
    ).toMatchObject({
      kind: "ok",
    });
    expect(await endpoint.http?.expireSessions()).toBe(1);
    const outcome = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "after expiry" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 1 });
    expect(endpoint.http?.sessionCount()).toBe(1);
    expect(endpoint.http?.state.effects().filter((e) => e.tool === "append_log")).toHaveLength(1);
  });

  it("without reconnect: the host gets session_expired (HTTP 404), the model nothing", async () => {
    const { endpoint, g } = await open("http", {});
    await g.governed.listTools();
    await endpoint.http?.expireSessions();
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "session_expired" });
    expect(g.seen.hostErrors[0]).toMatchObject({ reason: "session_expired", channel: "local" });
    expect(modelText(outcome)).not.toMatch(/404|Session not found|Streamable/);
  });
});
