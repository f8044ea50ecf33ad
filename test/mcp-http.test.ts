/**
 * Streamable HTTP specifics: an HTTP-layer 429/503 whose `Retry-After` header the SDK drops is
 * captured by `captureRetryAfter` and honored; an SSE stream dropped mid-call reaches the host
 * through `onTransportError`; HTTP errors that a call reports are not reported twice.
 */
import { readEffects } from "@governor/testkit";
import { describe, expect, it } from "vitest";
import { type GovernedOptions, modelText, openPerTest, type ServerOptions } from "./mcp-support.ts";

const openOn = openPerTest();
const open = (server: ServerOptions, options: GovernedOptions = {}) =>
  openOn("http", server, options);

describe("Retry-After over Streamable HTTP", () => {
  it.each([429, 503])(
    "an HTTP %i with Retry-After: 0.15 is retried no sooner than the hint",
    async (status) => {
      const { g } = await open({
        httpFaults: [{ status, retryAfter: "0.15", tool: "get_note" }],
      });
      const run = g.governor.startRun();
      const started = Date.now();
      const outcome = await g.governed.callTool(run, {
        name: "get_note",
        arguments: { id: "welcome" },
      });
      const elapsed = Date.now() - started;
      expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
      expect(modelText(outcome)).toMatch(/^# Welcome/);
      expect(g.seen.retries).toHaveLength(1);
      const [retry] = g.seen.retries;
      expect(retry?.failure).toMatchObject({
        channel: "local",
        local: "http_status",
        httpStatus: status,
      });
      expect(retry?.failure.retryAfterMs).toBeGreaterThan(100);
      expect(retry?.delayMs).toBeGreaterThanOrEqual(
        retry?.failure.retryAfterMs ?? Number.POSITIVE_INFINITY,
      );
      expect(elapsed).toBeGreaterThanOrEqual(140);
      // The call reported the HTTP error: it is not forwarded again as transport trouble.
      await new Promise((resolve) => setImmediate(resolve));
      expect(g.seen.transportErrors).toEqual([]);
    },
  );

  it("without captureRetryAfter the hint is lost: the retry uses the plain backoff (1–5 ms)", async () => {
    const { g } = await open(
      { httpFaults: [{ status: 429, retryAfter: "0.15", tool: "get_note" }] },
      { captureRetryAfter: false },
    );
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(g.seen.retries[0]?.failure.retryAfterMs).toBeUndefined();
    expect(g.seen.retries[0]?.delayMs).toBeLessThan(10);
  });

  it("a Retry-After above maxHintMs stops the call rather than retrying early", async () => {
    const { g } = await open({ httpFaults: [{ status: 429, retryAfter: 120, tool: "get_note" }] });
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "get_note",
      arguments: { id: "welcome" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(modelText(outcome)).not.toMatch(/Streamable HTTP/);
  });
});

describe("SSE responses", () => {
  it("a write whose response is lost after the commit: uncertain_mutation, one effect, not replayed", async () => {
    const { g, effectsFile } = await open({
      sse: true,
      scenario: { append_log: [{ kind: "drop_after_commit" }] },
    });
    const run = g.governor.startRun();
    const outcome = await g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "x" },
      timeoutMs: 300,
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(run.summary().attempts).toBe(1);
    expect(readEffects(effectsFile).filter((e) => e.tool === "append_log")).toHaveLength(1);
    expect(modelText(outcome)).not.toMatch(/SSE|fetch failed|socket/i);
  });
});
