/**
 * Streamable HTTP specifics: an HTTP-layer 429/503 whose `Retry-After` header the SDK drops is
 * captured by `captureRetryAfter` and honored; an SSE stream dropped mid-call reaches the host
 * through `onTransportError`; HTTP errors that a call reports are not reported twice.
 */
import { captureRetryAfter } from "@governor/mcp";
import { readEffects } from "@governor/testkit";
import { describe, expect, it } from "vitest";
import {
  type GovernedOptions,
  modelText,
  openPerTest,
  SDKS,
  type ServerOptions,
} from "./mcp-support.ts";

const openOn = openPerTest();
const open = (server: ServerOptions, options: GovernedOptions = {}) =>
  openOn("http", server, options);
const openOnV2 = openPerTest({ sdk: "v2" });
const OPEN_BY_SDK = {
  v1: open,
  v2: (server: ServerOptions, options: GovernedOptions = {}) => openOnV2("http", server, options),
};

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

  it.each(SDKS)(
    "%s: two calls at once: the Retry-After one call's response carried is that call's alone; the other does not wait on it",
    async (sdk) => {
      // search_notes gets a 503 without Retry-After, get_note a 429 with one, at the same time. The
      // 503's body is held until the 429 has come (the SDK reads it before it fails the call), and
      // the 429's until search_notes is answered: the hint is there while search_notes is judged.
      const came429 = deferred();
      const answered = deferred();
      const holding: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        if (response.status === 429) setTimeout(came429.resolve, 20);
        if (response.status !== 429 && response.status !== 503) return response;
        const wait = response.status === 429 ? answered.promise : came429.promise;
        return heldBody(response, wait);
      };
      const { g } = await OPEN_BY_SDK[sdk](
        {
          httpFaults: [
            { status: 429, retryAfter: "0.4", tool: "get_note" },
            { status: 503, tool: "search_notes" },
          ],
        },
        { captureRetryAfter: captureRetryAfter(holding) },
      );
      const run = g.governor.startRun();
      const limited = g.governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
      const unavailable = g.governed.callTool(run, {
        name: "search_notes",
        arguments: { query: "welcome" },
      });
      expect(await unavailable).toMatchObject({ kind: "ok", attempts: 2 });
      answered.resolve();
      expect(await limited).toMatchObject({ kind: "ok", attempts: 2 });
      const retryOf = (tool: string) => g.seen.retries.find((r) => r.tool === tool);
      expect(retryOf("search_notes")?.failure).toMatchObject({ httpStatus: 503 });
      expect(retryOf("search_notes")?.failure.retryAfterMs).toBeUndefined();
      expect(retryOf("search_notes")?.delayMs).toBeLessThan(10);
      const limitedRetry = retryOf("get_note");
      expect(limitedRetry?.failure).toMatchObject({ local: "http_status", httpStatus: 429 });
      expect(limitedRetry?.failure.retryAfterMs).toBeGreaterThan(300);
      expect(limitedRetry?.delayMs).toBeGreaterThanOrEqual(
        limitedRetry?.failure.retryAfterMs ?? Number.POSITIVE_INFINITY,
      );
    },
  );

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

/** A promise and its resolve. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** `response` with its body given to the reader only once `wait` settles. */
async function heldBody(response: Response, wait: Promise<void>): Promise<Response> {
  const body = new TextEncoder().encode(await response.text());
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await wait;
      controller.enqueue(body);
      controller.close();
    },
  });
  return new Response(stream, { status: response.status, headers: response.headers });
}
