/**
 * The adapter's own loops and reports under a hostile or slow server: tool listings that never
 * end, answers that arrive after their timeout.
 */
import { DEFAULT_SECRET, fixtureSecrets } from "@governor/testkit";
import { describe, expect, it } from "vitest";
import { type Endpoint, modelText, openPerTest, SERVER, TRANSPORTS } from "./mcp-support.ts";

const open = openPerTest({ effects: false, server: { lowlevel: true } });

function listRequests(endpoint: Endpoint): number {
  return endpoint.http?.requests().filter((r) => r.method === "tools/list").length ?? 0;
}

describe("issue 9.3: a tools/list that never ends (Streamable HTTP)", () => {
  it("issue 9.3: a server that always sends a fresh nextCursor is cut at 100 pages: listTools and callTool return, the host is told", async () => {
    // Time enough for 100 pages even on a loaded machine: the page cap is what ends it here.
    const { endpoint, g } = await open(
      "http",
      { endlessToolPages: "fresh" },
      { clientOptions: { requestTimeoutMs: 60_000 } },
    );
    const tools = await g.governed.listTools();
    expect(listRequests(endpoint)).toBe(100);
    expect(tools).toHaveLength(100);
    expect(g.seen.transportErrors.map((e) => e.message)).toEqual([
      "tools/list: stopped after 100 pages, the server kept sending a next cursor",
    ]);

    // An unknown tool lists again: also cut, and the call returns.
    const outcome = await g.governed.callTool(g.governor.startRun(), {
      name: "nope",
      arguments: {},
    });
    expect(outcome).toMatchObject({ kind: "model", reason: "unknown_tool" });
    expect(modelText(outcome)).toMatch(/Tools that exist: echo_101, echo_102, .*, …\.$/);
    expect(listRequests(endpoint)).toBe(200);
  });

  it("issue 9.3: the listing after an unknown tool stops at the run's deadline (slow endless pages)", async () => {
    // Not trusted: no listing for annotations before the call, only the one after the failure.
    const { endpoint, g } = await open(
      "http",
      { endlessToolPages: "fresh", toolPageDelayMs: 100 },
      {
        clientOptions: { requestTimeoutMs: 60_000 },
        policy: { servers: { [SERVER]: { trustAnnotations: false } } },
      },
    );
    const before = listRequests(endpoint);
    const started = Date.now();
    const run = g.governor.startRun({ deadline: Date.now() + 600 });
    const outcome = await g.governed.callTool(run, { name: "nope", arguments: {} });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(outcome).toMatchObject({ kind: "model", reason: "unknown_tool" });
    expect(listRequests(endpoint) - before).toBeLessThan(20);
  }, 20_000);

  it("issue 9.3: the call's own signal ends the listing after an unknown tool", async () => {
    const { endpoint, g } = await open(
      "http",
      { endlessToolPages: "fresh", toolPageDelayMs: 100 },
      {
        clientOptions: { requestTimeoutMs: 60_000 },
        policy: { servers: { [SERVER]: { trustAnnotations: false } } },
      },
    );
    const before = listRequests(endpoint);
    const started = Date.now();
    const outcome = await g.governed.callTool(g.governor.startRun(), {
      name: "nope",
      arguments: {},
      signal: AbortSignal.timeout(600),
    });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(outcome).toMatchObject({ kind: "model", reason: "unknown_tool" });
    expect(modelText(outcome)).not.toContain("Tools that exist");
    expect(listRequests(endpoint) - before).toBeLessThan(20);
  }, 20_000);

  it("issue 9.3: a server that sends the same cursor again is stopped at the repeat", async () => {
    const { endpoint, g } = await open("http", { endlessToolPages: "same" });
    const tools = await g.governed.listTools();
    expect(tools.map((t) => t.name)).toEqual(["echo_1", "echo_2"]);
    expect(listRequests(endpoint)).toBe(2);
    expect(g.seen.transportErrors.map((e) => e.message)).toEqual([
      "tools/list: stopped at a cursor the server had sent before",
    ]);
  });
});

describe.each(TRANSPORTS)("issue 9.4: late answers over %s", (kind) => {
  it("issue 9.4: an answer arriving after the timeout reaches onTransportError as its request id only, never its content", async () => {
    const { g } = await open(kind, {});
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "late_answer",
      arguments: { ms: 300 },
      timeoutMs: 80,
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    const deadline = Date.now() + 5000;
    while (g.seen.transportErrors.length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const reports = g.seen.transportErrors;
    expect(reports).toHaveLength(3);
    for (const report of reports) {
      expect(report).toMatchObject({ reason: "transport_error", channel: "local" });
      expect(report.message).toMatch(
        /^An answer to request \d+ arrived after the request ended \(timed out or cancelled\); dropped$/,
      );
      expect(report.cause).toBeUndefined();
      for (const secret of fixtureSecrets(DEFAULT_SECRET)) {
        expect(JSON.stringify({ message: report.message, cause: report.cause })).not.toContain(
          secret,
        );
      }
    }
  });
});
