import { describe, expect, it } from "vitest";
import { captureRetryAfter } from "./retry-after.ts";

function respond(status: number, headers: Record<string, string> = {}): typeof fetch {
  return async () => new Response(status === 204 ? null : "body", { status, headers });
}

describe("captureRetryAfter", () => {
  it("keeps the Retry-After of a failed response (seconds or HTTP date), once", async () => {
    const seconds = captureRetryAfter(respond(429, { "retry-after": "2" }));
    expect((await seconds.fetch("http://x")).status).toBe(429);
    expect(seconds.take()).toBe(2000);
    expect(seconds.take()).toBeUndefined();

    const now = Date.parse("2026-01-01T00:00:00Z");
    const date = captureRetryAfter(
      respond(503, { "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }),
      () => now,
    );
    await date.fetch("http://x");
    expect(date.take()).toBe(5000);
  });

  it("ignores successful responses and failures without the header; a later response replaces the hint", async () => {
    let next: Response = new Response("x", { status: 200, headers: { "retry-after": "9" } });
    const capture = captureRetryAfter(async () => next);
    await capture.fetch("http://x");
    expect(capture.take()).toBeUndefined();
    next = new Response("x", { status: 429, headers: { "retry-after": "1" } });
    await capture.fetch("http://x");
    next = new Response("x", { status: 500 });
    await capture.fetch("http://x");
    expect(capture.take()).toBeUndefined();
    next = new Response("x", { status: 429, headers: { "retry-after": "soon" } });
    await capture.fetch("http://x");
    expect(capture.take()).toBeUndefined();
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
