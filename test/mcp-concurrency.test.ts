/**
 * Calls in flight when the Streamable HTTP session ends, and reconnects that fail: counted at the
 * server (its request log and committed effects) and in the idempotency ledger.
 */
import { describe, expect, it } from "vitest";
import {
  type Endpoint,
  type Governed,
  type GovernedOptions,
  ledgerStates,
  openPerTest,
  SERVER,
  type ServerOptions,
  tappedStore,
} from "./mcp-support.ts";

const openOn = openPerTest({ effects: false });

async function open(
  server: ServerOptions,
  options: GovernedOptions = {},
): Promise<{
  http: NonNullable<Endpoint["http"]>;
  g: Governed;
  ledger: ReturnType<typeof tappedStore>;
}> {
  const ledger = tappedStore();
  const { endpoint, g } = await openOn("http", server, {
    ...options,
    governorOptions: {
      metrics: false,
      store: ledger.store,
      ...options.governorOptions,
    },
  });
  if (!endpoint.http) throw new Error("an HTTP endpoint has its server");
  return { http: endpoint.http, g, ledger };
}

/** The HTTP statuses the server answered each `tools/call` of `tool` with, in order. */
function callStatuses(http: NonNullable<Endpoint["http"]>, tool: string): number[] {
  return http
    .requests()
    .filter((r) => r.method === "tools/call" && r.tool === tool)
    .map((r) => r.status);
}

function lines(http: NonNullable<Endpoint["http"]>): string[] {
  return http.state
    .effects()
    .filter((e) => e.tool === "append_log")
    .map((e) => String(e.args.line))
    .sort();
}

const WRITES = ["w0", "w1", "w2", "w3"];

function fourWrites(g: Governed, run: ReturnType<Governed["governor"]["startRun"]>) {
  return Promise.all(
    WRITES.map((line) =>
      g.governed.callTool(run, {
        name: "append_log",
        arguments: { line },
        callId: `call-${line}`,
      }),
    ),
  );
}

describe("issue 9: an expired session with calls in flight (Streamable HTTP)", () => {
  it("issue 9.1: four parallel writes refused with 404 are each resent once after one reconnect: four effects, none uncertain", async () => {
    const { http, g, ledger } = await open({}, { reconnect: true });
    await g.governed.listTools();
    expect(await http.expireSessions()).toBe(1);

    const run = g.governor.startRun();
    const outcomes = await fourWrites(g, run);

    expect(outcomes.map((o) => o.kind)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(lines(http)).toEqual(WRITES);
    // Counted at the server: four refusals for the gone session, then four executions.
    const statuses = callStatuses(http, "append_log");
    expect(statuses.filter((s) => s === 404)).toHaveLength(4);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(http.state.calls("append_log")).toBe(4);
    expect(http.sessionCount()).toBe(1);
    expect(ledger.keys).toHaveLength(4);
    expect(await ledgerStates(ledger)).toEqual([
      "succeeded",
      "succeeded",
      "succeeded",
      "succeeded",
    ]);
    expect(run.summary().reason).toBe("completed");
  });

  it("issue 9.1 done-means: session expiry and a crashing reconnect: each write executes once, each unsent one is resent once, none is left uncertain", async () => {
    let reconnects = 0;
    const { http, g, ledger } = await open(
      {},
      {
        hostAnswer: "retry",
        reconnect: async (connect) => {
          reconnects++;
          if (reconnects === 1) throw new Error("reconnect crashed: ECONNRESET while initializing");
          await connect();
        },
      },
    );
    await g.governed.listTools();
    await http.expireSessions();

    const run = g.governor.startRun();
    const outcomes = await fourWrites(g, run);

    expect(outcomes.map((o) => o.kind)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(reconnects).toBe(2);
    // At most once, exactly once here: every write executed, none twice.
    expect(lines(http)).toEqual(WRITES);
    expect(http.state.calls("append_log")).toBe(4);
    // Each write reached the server twice: refused (404), then executed.
    const statuses = callStatuses(http, "append_log");
    expect(statuses).toHaveLength(8);
    expect(statuses.filter((s) => s === 404)).toHaveLength(4);
    // The crash reached the host as a broken session, nothing was sent: safe to retry.
    expect(g.seen.hostErrors.map((e) => e.reason)).toEqual(Array(4).fill("session_expired"));
    expect(await ledgerStates(ledger)).toEqual([
      "succeeded",
      "succeeded",
      "succeeded",
      "succeeded",
    ]);
  });

  it("issue 9.1: a write in flight when the session ends that got no 404 of its own may have run: it stays uncertain and stops the run; the refused one, waiting for the reconnect meanwhile, is not sent after that stop", async () => {
    const { http, g, ledger } = await open(
      {},
      {
        reconnect: true,
        policy: {
          servers: {
            [SERVER]: { trustAnnotations: true, tools: { slow: { effect: "mutating" } } },
          },
        },
      },
    );
    await g.governed.listTools();
    const run = g.governor.startRun();
    const slow = g.governed.callTool(run, {
      name: "slow",
      arguments: { ms: 5000 },
      callId: "slow-write",
      timeoutMs: 400,
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await http.expireSessions();
    const write = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "after" },
      callId: "after",
    });
    // The reconnect waits for the slow write to leave the old transport; its timeout (400 ms) is a
    // write in doubt, which stops the run. The refused write sent nothing and is not sent after
    // that stop (`beforeSending`): it says it was not made, and its key is free again.
    expect(write).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    if (write.kind === "stop") expect(write.result.content[0].text).toContain("was not made");
    expect(await slow).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(lines(http)).toEqual([]);
    const states = await ledgerStates(ledger);
    expect(states).toEqual(["uncertain", "failed"]);
  });
});

describe("issue 9.2: a reconnect that throws or hangs", () => {
  it("issue 9.2: a reconnect that throws leaves the unsent write not_sent: session_expired to the host, the ledger says failed, not uncertain", async () => {
    const { http, g, ledger } = await open(
      {},
      {
        reconnect: async () => {
          throw new Error(
            `initialize refused: Authorization: Bearer ${"x".repeat(8)}.secret-token`,
          );
        },
      },
    );
    await g.governed.listTools();
    await http.expireSessions();
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "never sent" },
      callId: "w",
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "session_expired" });
    expect(g.seen.hostErrors.map((e) => [e.reason, e.channel])).toEqual([
      ["session_expired", "local"],
    ]);
    expect(g.seen.hostErrors[0]?.message).toMatch(/^append_log: Reconnect failed: /);
    expect(g.seen.hostErrors[0]?.message).not.toContain("secret-token");
    expect(callStatuses(http, "append_log")).toEqual([404]);
    expect(lines(http)).toEqual([]);
    expect(await ledgerStates(ledger)).toEqual(["failed"]);
  });

  it("issue 9.2: a hanging reconnect is bounded by reconnectTimeoutMs: the write ends not_sent, the hook's signal aborts, a later call is not blocked", async () => {
    let reconnects = 0;
    let hung: AbortSignal | undefined;
    const { http, g, ledger } = await open(
      {},
      {
        clientOptions: { reconnectTimeoutMs: 300 },
        reconnect: (connect, signal) => {
          reconnects++;
          if (reconnects > 1) return connect();
          hung = signal;
          return new Promise<void>(() => undefined);
        },
      },
    );
    await g.governed.listTools();
    await http.expireSessions();

    const started = Date.now();
    const outcome = await g.governed.callTool(g.governor.startRun(), {
      name: "append_log",
      arguments: { line: "never sent" },
      callId: "w",
    });
    const waited = Date.now() - started;
    expect(outcome).toMatchObject({ kind: "stop", reason: "session_expired" });
    expect(waited).toBeLessThan(3000);
    expect(g.seen.hostErrors[0]?.message).toBe(
      "append_log: Reconnect did not finish within 300 ms",
    );
    expect(hung?.aborted).toBe(true);
    expect(await ledgerStates(ledger)).toEqual(["failed"]);

    // The next call on the client reconnects afresh instead of waiting for the hung one.
    const next = await g.governed.callTool(g.governor.startRun(), {
      name: "append_log",
      arguments: { line: "after" },
      callId: "w2",
    });
    expect(next).toMatchObject({ kind: "ok", attempts: 1 });
    expect(Date.now() - started).toBeLessThan(6000);
    expect(lines(http)).toEqual(["after"]);
    expect(await ledgerStates(ledger)).toEqual(["failed", "succeeded"]);
  }, 20_000);

  it("issue 9.2: the call's own signal ends its wait for a hanging reconnect at once: aborted, nothing sent", async () => {
    const { http, g, ledger } = await open(
      {},
      { reconnect: () => new Promise<void>(() => undefined) },
    );
    await g.governed.listTools();
    await http.expireSessions();
    const started = Date.now();
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "never sent" },
      callId: "w",
      signal: AbortSignal.timeout(300),
    });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(run.summary().reason).toBe("aborted");
    expect(callStatuses(http, "append_log")).toEqual([404]);
    expect(lines(http)).toEqual([]);
    // The ledger entry is the run's to judge: it treats any attempt cut by an abort as `unknown`
    // (core's run.ts), although this one was only waiting to reconnect.
    expect(ledger.keys).toHaveLength(1);
  }, 20_000);
});
