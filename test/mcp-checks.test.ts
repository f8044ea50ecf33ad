/**
 * The four checks of the MCP error-handling guidance, end to end: the real SDK client (1.32's and
 * 2.x's), governed by @governor/mcp, against the testkit's fault server as a child process (stdio)
 * and over Streamable HTTP.
 */
import { countDuplicateWrites, fixtureSecrets, readEffects } from "@governor/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { endpointPair, modelText, SDKS, TRANSPORTS, tempDir } from "./mcp-support.ts";

/** What must never reach the model, whatever the server put in its raw errors. */
function expectClean(text: string): void {
  for (const secret of fixtureSecrets()) expect(text).not.toContain(secret);
  for (const fragment of [
    "/home",
    "/work",
    "/srv",
    "node_modules",
    "sk-",
    "ghp_",
    "Bearer",
    "eyJ",
  ]) {
    expect(text).not.toContain(fragment);
  }
  // Stack frames: "    at fn (/path/file.ts:1:2)" or "at /path/file.js:42:17".
  expect(text).not.toMatch(/^\s*at\s/m);
  expect(text).not.toMatch(/\bat \S*[/\\]\S*:\d+/);
  expect(text).not.toMatch(/\(\S+:\d+:\d+\)/);
}

const CASES = SDKS.flatMap((sdk) => TRANSPORTS.map((kind) => [sdk, kind] as const));

describe.each(CASES)("the four checks, SDK %s over %s", (sdk, kind) => {
  const tmp = tempDir();
  const effectsFile = tmp.file(`effects-${sdk}-${kind}.jsonl`);
  const pair = endpointPair(
    kind,
    {
      effectsFile,
      scenario: {
        create_note: [
          { kind: "status", status: 503 },
          { kind: "status", status: 503 },
        ],
        append_log: [{ kind: "status", status: 503 }],
        search_notes: [{ kind: "malformed" }],
      },
    },
    sdk,
  );
  afterAll(() => tmp.cleanup());

  it("(1) an id that does not exist: isError with an actionable text naming the known ids", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "drafts" },
    });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "not_found",
    });
    const text = modelText(outcome);
    expect(text).toContain('No note with id "drafts"');
    expect(text).toContain("welcome");
    expect(text).toContain("release-notes");
    expect(text).toMatch(/^get_note: /);
    expect(run.ended).toBe(false);
  });

  it("(2) a crash with a stack trace and secrets: none of them reaches the model", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "crash_with_stack",
      arguments: {},
    });
    expect(outcome.kind).not.toBe("ok");
    const text = modelText(outcome);
    expect(text).toMatch(/^crash_with_stack: Unhandled exception/);
    expectClean(text);
    // The summary's last failure is telemetry, and redacted too.
    expectClean(run.summary().lastFailure?.text ?? "");
  });

  it("(2) a JSON-RPC error whose data holds secrets reaches the host with them, the model without", async () => {
    const run = pair.low.governor.startRun();
    const outcome = await pair.low.governed.callTool(run, { name: "internal", arguments: {} });
    expect(outcome).toMatchObject({ kind: "stop", reason: "protocol_error" });
    expectClean(modelText(outcome));
    expect(pair.low.seen.hostErrors).toHaveLength(1);
    const cause = pair.low.seen.hostErrors[0]?.cause as { data?: unknown } | undefined;
    expect(JSON.stringify(cause?.data)).toContain("postgres://");
  });

  it("a host-routed stop says what happened once", async () => {
    const run = pair.low.governor.startRun();
    const outcome = await pair.low.governed.callTool(run, { name: "internal", arguments: {} });
    expect(modelText(outcome)).not.toMatch(
      /connection to the tool failed\. The connection to the tool failed/i,
    );
  });

  it.runIf(kind === "stdio")(
    "(3) a non-JSON line on stdout: onerror reaches the host, the call ends by the local timeout, nothing of it reaches the model",
    async () => {
      pair.g.reset();
      const run = pair.g.governor.startRun();
      const outcome = await pair.g.governed.callTool(run, {
        name: "junk_stdout",
        arguments: {},
        timeoutMs: 150,
      });
      // A read-only tool: the timeouts are retried, then the run stops.
      expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
      expect(run.summary()).toMatchObject({ attempts: 3, retries: 2, reason: "retries_exhausted" });
      expect(pair.g.seen.retries.map((r) => r.failure.local)).toEqual(["timeout", "timeout"]);
      if (sdk === "v1") {
        expect(pair.g.seen.transportErrors.length).toBeGreaterThanOrEqual(3);
      } else {
        // 2.x's stdio reader skips a line that is not JSON without a word (sdk-v2-quirks (e)).
        expect(pair.g.seen.transportErrors).toEqual([]);
      }
      for (const error of pair.g.seen.transportErrors) {
        expect(error).toMatchObject({ reason: "transport_error", channel: "local" });
        expect(error.cause).toBeInstanceOf(SyntaxError);
      }
      const text = modelText(outcome);
      expect(text).not.toMatch(/oops|not JSON-RPC|SyntaxError|Unexpected token/);
      expect(text).toContain("Request timed out");
    },
  );

  it("(3) a result failing the result schema: ZodError (2.x: SdkError INVALID_RESULT) → host (malformed_response), not the model", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "search_notes",
      arguments: { query: "x" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "malformed_response" });
    expect(pair.g.seen.hostErrors).toHaveLength(1);
    const [error] = pair.g.seen.hostErrors;
    expect(error).toMatchObject({
      reason: "malformed_response",
      channel: "local",
      tool: "search_notes",
    });
    if (sdk === "v1") expect((error?.cause as Error | undefined)?.name).toBe("$ZodError");
    else expect(error?.cause).toMatchObject({ name: "SdkError", code: "INVALID_RESULT" });
    if (outcome.kind === "stop") expect(outcome.hostError).toBe(error);
    expect(modelText(outcome)).not.toMatch(/not an array|invalid_type|expected/);
    // The low-level server's bad_result is the same failure.
    const lowRun = pair.low.governor.startRun();
    const lowOutcome = await pair.low.governed.callTool(lowRun, {
      name: "bad_result",
      arguments: {},
    });
    expect(lowOutcome).toMatchObject({ kind: "stop", reason: "malformed_response" });
  });

  it("(3) a JSON-RPC error response: McpError → host (protocol_error), not the model", async () => {
    pair.low.reset();
    const run = pair.low.governor.startRun();
    const outcome = await pair.low.governed.callTool(run, {
      name: "peer_error",
      arguments: { code: -32050, message: "Upstream session in a bad state" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "protocol_error" });
    expect(pair.low.seen.hostErrors).toHaveLength(1);
    expect(pair.low.seen.hostErrors[0]).toMatchObject({
      reason: "protocol_error",
      channel: "protocol",
      failureCode: -32050,
    });
    expect(modelText(outcome)).not.toContain("bad state");
  });

  it("(4) a known upstream failure: no mutation before the error result, no retry duplicated one", async () => {
    // create_note: 503 twice, then it runs; the key travels in _meta and the server honors it.
    const run = pair.g.governor.startRun();
    const created = await pair.g.governed.callTool(run, {
      name: "create_note",
      arguments: { title: "t", body: "b" },
    });
    expect(created).toMatchObject({ kind: "ok", attempts: 3 });
    // append_log (ignores keys): 503 is a failure before any effect, so one retry is safe.
    const appended = await pair.g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "x" },
    });
    expect(appended).toMatchObject({ kind: "ok", attempts: 2 });
    // transfer_funds refuses above its limit: no effect.
    const refused = await pair.g.governed.callTool(run, {
      name: "transfer_funds",
      arguments: { amount: 5000 },
    });
    expect(refused.kind).toBe("stop");

    const effects = readEffects(effectsFile);
    expect(effects.filter((e) => e.tool === "create_note")).toHaveLength(1);
    expect(effects.find((e) => e.tool === "create_note")?.key).toMatch(/^gk_/);
    expect(effects.filter((e) => e.tool === "append_log")).toHaveLength(1);
    expect(effects.filter((e) => e.tool === "transfer_funds")).toHaveLength(0);
    expect(countDuplicateWrites(effects)).toBe(0);
  });
});
