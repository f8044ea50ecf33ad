/**
 * Every scripted failure of the fault server ends in the action docs/architecture.md prescribes, through the
 * real SDK client over stdio and Streamable HTTP.
 */
import { readEffects } from "@governor/testkit";
import { afterAll, describe, expect, it, vi } from "vitest";
import { endpointPair, modelText, TRANSPORTS, tempDir } from "./mcp-support.ts";

describe.each(TRANSPORTS)("scripted failures over %s", (kind) => {
  const tmp = tempDir();
  const effectsFile = tmp.file(`effects-${kind}.jsonl`);
  const pair = endpointPair(kind, {
    effectsFile,
    scenario: {
      // 429 with a 450 ms retry-after (as retryNotBefore: an instant, so the time the answer
      // takes to be read under load is taken off it; below the policy's maxHintMs 500), then normal.
      get_note: [{ kind: "status", status: 429, retryAfterSeconds: 0.45 }],
      append_log: [{ kind: "hang_after_commit", ms: 3000 }],
    },
  });
  afterAll(() => tmp.cleanup());

  it("rate limited with a retry-after: retried after the hint, then succeeds; the model sees only the result", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const started = Date.now();
    const outcome = await pair.g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(pair.g.seen.retries).toHaveLength(1);
    const [retry] = pair.g.seen.retries;
    expect(retry?.decision.reason).toBe("rate_limited");
    expect(retry?.failure.retryAfterMs).toBeGreaterThan(0);
    expect(retry?.delayMs).toBeGreaterThanOrEqual(
      retry?.failure.retryAfterMs ?? Number.POSITIVE_INFINITY,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(retry?.delayMs ?? 0);
    expect(modelText(outcome)).toMatch(/^# Welcome/);
  });

  it("rate limited with a hint above maxHintMs: stops at once instead of retrying early", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, { name: "rate_limited", arguments: {} });
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(run.summary().attempts).toBe(1);
  });

  it("503 twice, then success: ok, the retries are invisible to the model", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "flaky_fetch",
      arguments: { url: "https://example.com" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 3 });
    expect(modelText(outcome)).toBe("200 OK: fetched https://example.com (attempt 3)");
    expect(pair.g.seen.retries.map((r) => r.decision.reason)).toEqual([
      "unavailable",
      "unavailable",
    ]);
    expect(run.summary()).toMatchObject({ retries: 2, reason: "completed" });
  });

  it("not found → correct_arguments", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "nope" },
    });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "not_found",
    });
  });

  it("invalid argument (the tool's check and the SDK's input validation) → correct_arguments", async () => {
    const run = pair.g.governor.startRun();
    const outOfRange = await pair.g.governed.callTool(run, {
      name: "search_notes",
      arguments: { query: "x", limit: 100 },
    });
    expect(outOfRange).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "invalid_argument",
    });
    expect(modelText(outOfRange)).toContain("limit must be between 1 and 50");
    const wrongType = await pair.g.governed.callTool(run, {
      name: "search_notes",
      arguments: { query: "x", limit: "ten" },
    });
    expect(wrongType).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "invalid_argument",
    });
    expect(modelText(wrongType)).toContain("Input validation error");
    expect(modelText(wrongType)).not.toContain("MCP error");
  });

  it("permission denied → stop forbidden (a person must grant access)", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "delete_account",
      arguments: { id: "acct-1" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "forbidden", personResolvable: true });
    expect(run.ended).toBe(true);
  });

  it("business rule refusal → stop, no effect", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "transfer_funds",
      arguments: { amount: 5000 },
    });
    expect(outcome.kind).toBe("stop");
    expect(readEffects(effectsFile).filter((e) => e.tool === "transfer_funds")).toHaveLength(0);
  });

  it("business rule refusal → stop with reason business_rule", async () => {
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "transfer_funds",
      arguments: { amount: 5000 },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "business_rule" });
  });

  it("unknown tool (McpServer isError text) → switch_tool; the adapter refreshes its tool list and names the tools", async () => {
    await pair.g.governed.listTools();
    const listTools = vi.spyOn(pair.g.client, "listTools");
    try {
      const run = pair.g.governor.startRun();
      const outcome = await pair.g.governed.callTool(run, {
        name: "get_notes",
        arguments: { id: "welcome" },
      });
      expect(outcome).toMatchObject({
        kind: "model",
        action: "switch_tool",
        reason: "unknown_tool",
      });
      expect(listTools).toHaveBeenCalledTimes(1);
      const text = modelText(outcome);
      expect(text).toContain("get_notes: Tool get_notes not found.");
      expect(text).toMatch(/Tools that exist: get_note, search_notes, /);
    } finally {
      listTools.mockRestore();
    }
  });

  it("unknown tool (low-level JSON-RPC -32602) → switch_tool, not the host; tool list refreshed", async () => {
    pair.low.reset();
    await pair.low.governed.listTools();
    const listTools = vi.spyOn(pair.low.client, "listTools");
    try {
      const run = pair.low.governor.startRun();
      const outcome = await pair.low.governed.callTool(run, {
        name: "ecco",
        arguments: { text: "hi" },
      });
      expect(outcome).toMatchObject({
        kind: "model",
        action: "switch_tool",
        reason: "unknown_tool",
      });
      expect(listTools).toHaveBeenCalledTimes(1);
      expect(modelText(outcome)).toContain("Tools that exist: echo, ");
      expect(pair.low.seen.hostErrors).toHaveLength(0);
    } finally {
      listTools.mockRestore();
    }
  });

  it("low-level -32602 for bad arguments → host by default (protocol_error)", async () => {
    pair.low.reset();
    const run = pair.low.governor.startRun();
    const outcome = await pair.low.governed.callTool(run, { name: "echo", arguments: { text: 3 } });
    expect(outcome).toMatchObject({ kind: "stop", reason: "protocol_error" });
    expect(pair.low.seen.hostErrors[0]).toMatchObject({ failureCode: -32602, channel: "protocol" });
  });

  it("a hang past the timeout on a read-only tool: retried, then stops", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "slow",
      arguments: { ms: 5000 },
      timeoutMs: 120,
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(run.summary()).toMatchObject({ attempts: 3, retries: 2 });
    expect(
      pair.g.seen.retries.every(
        (r) => r.failure.local === "timeout" && r.failure.channel === "local",
      ),
    ).toBe(true);
    expect(modelText(outcome)).toContain("slow: Request timed out.");
  });

  it("a hang past the timeout on a mutating tool: stop uncertain_mutation, exactly one effect", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "hello" },
      timeoutMs: 500,
    });
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      personResolvable: true,
    });
    expect(run.summary().attempts).toBe(1);
    expect(pair.g.seen.retries).toHaveLength(0);
    expect(modelText(outcome)).toContain("the write may have happened");
    // Under load the request can reach the server after the timeout: wait for its write, then
    // check there is exactly one (nothing wrote it again).
    const appended = () => readEffects(effectsFile).filter((e) => e.tool === "append_log");
    await vi.waitFor(() => expect(appended().length).toBeGreaterThan(0), { timeout: 5_000 });
    expect(appended()).toHaveLength(1);
  });
});
