// Attacks on the per-call Retry-After (captureRetryAfter's `within`, docs/mcp.md): a request that
// outlives the call that started it (a reconnect scheduled inside a call) and requests made after
// the call's own awaits, against a real HTTP server with the real fetch.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { captureRetryAfter, type RetryAfterSlot } from "@governor/mcp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: Server;
let base = "";
beforeAll(async () => {
  // /busy answers 503 with Retry-After: 7; /ok answers 200.
  server = createServer((req, res) => {
    if (req.url === "/busy") {
      res.writeHead(503, { "retry-after": "7" });
      res.end("busy");
      return;
    }
    res.writeHead(200);
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a Retry-After is its own call's, whatever outlives a call", () => {
  it("a request a call scheduled for later (a reconnect) gives its hint to that call only, never to the call out when it lands", async () => {
    const capture = captureRetryAfter();
    const a: RetryAfterSlot = { retryAfterMs: undefined };
    const b: RetryAfterSlot = { retryAfterMs: undefined };
    let reconnected: Promise<unknown> = Promise.resolve();
    await capture.within(a, async () => {
      await capture.fetch(`${base}/ok`);
      // A reconnect the call leaves behind, landing while another call is out.
      reconnected = sleep(50).then(() => capture.fetch(`${base}/busy`));
    });
    const other = capture.within(b, async () => {
      await sleep(100);
      await capture.fetch(`${base}/ok`);
      await sleep(100);
      return b.retryAfterMs;
    });
    await reconnected;
    expect(await other).toBeUndefined();
    expect(b.retryAfterMs).toBeUndefined();
    expect(a.retryAfterMs).toBe(7_000);
  });

  it("a request made after the call's own awaits (timers, promise chains) still gives its hint to the call", async () => {
    const capture = captureRetryAfter();
    const a: RetryAfterSlot = { retryAfterMs: undefined };
    const b: RetryAfterSlot = { retryAfterMs: undefined };
    await Promise.all([
      capture.within(a, async () => {
        await sleep(20);
        await Promise.resolve().then(() => sleep(10));
        await new Promise<void>((resolve) => setImmediate(resolve));
        await capture.fetch(`${base}/busy`);
      }),
      capture.within(b, async () => {
        await sleep(60);
        await capture.fetch(`${base}/ok`);
      }),
    ]);
    expect(a.retryAfterMs).toBe(7_000);
    expect(b.retryAfterMs).toBeUndefined();
    // Outside any call, a response keeps no hint anywhere.
    await capture.fetch(`${base}/busy`);
    expect(b.retryAfterMs).toBeUndefined();
  });
});
