import { describe, expect, it } from "vitest";
import { captureRetryAfter, type RetryAfterSlot } from "./retry-after.ts";

function respond(status: number, headers: Record<string, string> = {}): typeof fetch {
  return async () => new Response(status === 204 ? null : "body", { status, headers });
}

const slot = (): RetryAfterSlot => ({ retryAfterMs: undefined });

describe("captureRetryAfter", () => {
  it("keeps the Retry-After of a failed response (seconds or HTTP date) on the slot of the request", async () => {
    const seconds = captureRetryAfter(respond(429, { "retry-after": "2" }));
    const a = slot();
    const response = await seconds.within(a, () => seconds.fetch("http://x"));
    expect(response.status).toBe(429);
    expect(a.retryAfterMs).toBe(2000);

    const now = Date.parse("2026-01-01T00:00:00Z");
    const date = captureRetryAfter(
      respond(503, { "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }),
      () => now,
    );
    const b = slot();
    await date.within(b, () => date.fetch("http://x"));
    expect(b.retryAfterMs).toBe(5000);
  });

  it("ignores successful responses and failures without the header; a later response replaces the hint", async () => {
    let next: Response = new Response("x", { status: 200, headers: { "retry-after": "9" } });
    const capture = captureRetryAfter(async () => next);
    const s = slot();
    await capture.within(s, () => capture.fetch("http://x"));
    expect(s.retryAfterMs).toBeUndefined();
    next = new Response("x", { status: 429, headers: { "retry-after": "1" } });
    await capture.within(s, () => capture.fetch("http://x"));
    expect(s.retryAfterMs).toBe(1000);
    next = new Response("x", { status: 500 });
    await capture.within(s, () => capture.fetch("http://x"));
    expect(s.retryAfterMs).toBeUndefined();
    next = new Response("x", { status: 429, headers: { "retry-after": "soon" } });
    await capture.within(s, () => capture.fetch("http://x"));
    expect(s.retryAfterMs).toBeUndefined();
  });

  it("a request outside within keeps no hint, and touches no slot", async () => {
    const capture = captureRetryAfter(respond(429, { "retry-after": "3" }));
    const s = slot();
    await capture.within(s, async () => undefined);
    expect((await capture.fetch("http://x")).status).toBe(429);
    expect(s.retryAfterMs).toBeUndefined();
  });

  it("requests at once: each slot gets its own request's hint, whatever order the answers come in", async () => {
    const answers = new Map<string, () => void>();
    const capture = captureRetryAfter(async (input) => {
      const url = String(input);
      await new Promise<void>((resolve) => answers.set(url, resolve));
      return url.endsWith("/limited")
        ? new Response("x", { status: 429, headers: { "retry-after": "4" } })
        : new Response("x", { status: 503 });
    });
    const limited = slot();
    const unavailable = slot();
    // Each request goes out after an await inside its own context, as the SDK's send does.
    const send = (url: string) => async () => {
      await Promise.resolve();
      return capture.fetch(url);
    };
    const first = capture.within(limited, send("http://x/limited"));
    const second = capture.within(unavailable, send("http://x/unavailable"));
    await new Promise((resolve) => setImmediate(resolve));
    answers.get("http://x/limited")?.();
    await first;
    answers.get("http://x/unavailable")?.();
    await second;
    expect(limited.retryAfterMs).toBe(4000);
    expect(unavailable.retryAfterMs).toBeUndefined();
  });

  it("passes the request through unchanged", async () => {
    const seen: unknown[] = [];
    const capture = captureRetryAfter(async (input, init) => {
      seen.push(input, init?.method);
      return new Response("ok");
    });
    const response = await capture.fetch("http://x/mcp", { method: "POST" });
    expect(await response.text()).toBe("ok");
    expect(seen).toEqual(["http://x/mcp", "POST"]);
  });
});
