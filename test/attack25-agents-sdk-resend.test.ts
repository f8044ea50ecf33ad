/**
 * attack25: the Agents SDK's MCPServerStreamableHttp reconnects and sends a tool call once more by
 * itself when its client lost its transport (`reconnect-and-retry`, inside one Governor attempt),
 * without `ctx.beforeSending`: its first try found no transport (nothing sent), it reconnects (an
 * initialized notification reopening its session), and its second try reaches the server. Only
 * Governor's own reconnect (governMcpServer's `reconnect`) goes through `beforeSending`; the SDK's
 * happens inside the executor, out of its sight.
 *
 * A read: a stop Governor decides cuts the reads in flight (their signal aborts), and the SDK
 * checks the signal before its second try. A write's attempt is not cut at a stop (cutting one
 * already on the wire would leave its outcome in doubt), so its second try went out after the run
 * ended. Fixed with the server's `fetch` option, which the SDK hands to every transport it makes,
 * its reconnect's too: `governedFetch()` asks `beforeSending` before an attempt's first
 * `tools/call` goes out, so the write is refused before any byte is sent and settled as not sent
 * (the write test failed before the fix). An attempt that went out before the stop is let finish,
 * its later sends too (the transport's resend after a 401): refusing those would leave a write
 * the server may have made in doubt.
 */
import { createGovernor } from "@governor/core";
import { governedFetch, governMcpServer, governorStopOf } from "@governor/openai-agents";
import { type HttpFaultServer, startHttpServer } from "@governor/testkit";
import { MCPServerStreamableHttp } from "@openai/agents";
import { afterEach, describe, expect, it } from "vitest";

describe("the Agents SDK's own resend after a reconnect", () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
  });

  /**
   * Connects `server` and, in a run of one call, sends a write; once the write waits at `point`
   * (on the wire already), a read past the budget stops the run. The write is not awaited: the
   * test releases `point` after it has read the stop.
   */
  async function writeHeldAtStop(server: MCPServerStreamableHttp, point: ReturnType<typeof hold>) {
    await server.connect();
    cleanup.push(() => server.close());
    const governor = createGovernor(
      { budgets: { calls: 1 }, servers: { notes: { tools: WRITE_AND_READ } } },
      { metrics: false },
    );
    const run = governor.startRun();
    const governed = governMcpServer(server, { governor, run, server: "notes" });
    const write = governed.callTool("append_log", { line: "welcome" });
    await point.reachedOnce;
    const second = governed.callTool("get_note", { id: "other" }).catch((e: unknown) => e);
    return { write, second, run };
  }

  it("a read is not sent after a parallel call's stop ended the run", async () => {
    const http: HttpFaultServer = await startHttpServer({ jsonResponse: true });
    cleanup.push(() => http.close());
    const server = new MCPServerStreamableHttp({ url: http.url, name: "notes" });
    await server.connect();
    cleanup.push(() => server.close());
    const governor = createGovernor(
      {
        budgets: { calls: 1 },
        servers: { notes: { tools: { get_note: { effect: "read_only" } } } },
      },
      { metrics: false },
    );
    const run = governor.startRun();
    const governed = governMcpServer(server, { governor, run, server: "notes" } as never);
    // The client's transport goes away (the SDK detaches it): its next call reconnects itself.
    const session = (
      server as unknown as { underlying: { session: { transport?: { close(): Promise<void> } } } }
    ).underlying.session;
    await session.transport?.close();
    const sent = () => http.requests().filter((r) => r.method === "tools/call");
    const read = governed.callTool("get_note", { id: "welcome" });
    const second = governed.callTool("get_note", { id: "other" }).catch((e: unknown) => e);
    expect(String(await second)).toContain("budget_exhausted");
    expect(run.ended).toBe(true);
    // The stop cut the read's attempt: the SDK sees its signal aborted and does not resend.
    await read.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sent()).toEqual([]);
  });

  it("a write is not sent after a parallel call's stop ended the run", async () => {
    const http: HttpFaultServer = await startHttpServer({ jsonResponse: true });
    cleanup.push(() => http.close());
    // The SDK's reconnect is held until the stop ended the run: its second try
    // comes after the stop whatever the order the two calls would have run in.
    const reconnect = hold();
    let connected = false;
    const server = new MCPServerStreamableHttp({
      url: http.url,
      name: "notes",
      fetch: governedFetch(async (input, init) => {
        // It reopens the session it had (a notifications/initialized), or makes a new one.
        const body = typeof init?.body === "string" ? init.body : "";
        if (connected && /"(initialize|notifications\/initialized)"/.test(body)) {
          reconnect.reached();
          await reconnect.released;
        }
        return fetch(input, init);
      }),
    });
    await server.connect();
    connected = true;
    cleanup.push(() => server.close());
    const sdkCalls = watchSdkCalls(server);
    const governor = createGovernor(
      {
        budgets: { calls: 1 },
        servers: { notes: { tools: WRITE_AND_READ } },
      },
      { metrics: false },
    );
    const run = governor.startRun();
    const governed = governMcpServer(server, { governor, run, server: "notes" });
    // The client's transport goes away (the SDK detaches it): its next call reconnects itself.
    await detachTransport(server);
    const sent = () => http.requests().filter((r) => r.method === "tools/call");
    const write = governed.callTool("append_log", { line: "welcome" }).catch((e: unknown) => e);
    await reconnect.reachedOnce;
    const second = governed.callTool("get_note", { id: "other" }).catch((e: unknown) => e);
    expect(String(await second)).toContain("budget_exhausted");
    expect(run.ended).toBe(true);
    reconnect.release();
    // The SDK's second try asked the fetch to send after the stop: refused before any byte went
    // out, so the write was not made, and nothing is left in doubt (no key to settle).
    const stop = governorStopOf(await write);
    expect(stop?.reason).toBe("budget_exhausted");
    expect(stop?.idempotencyKey).toBeUndefined();
    expect(stop?.modelText).toContain("not made");
    // The SDK's own call ended (its second try rejected by the fetch): nothing more can go out.
    await Promise.allSettled(sdkCalls);
    expect(sdkCalls).toHaveLength(1);
    expect(sent()).toEqual([]);
  });

  it("a write already on the wire when the stop came finishes, and its result is recorded", async () => {
    const http: HttpFaultServer = await startHttpServer({ jsonResponse: true });
    cleanup.push(() => http.close());
    // The write's request is held after the fetch handed it on, until the stop ended the run.
    const held = hold();
    const server = new MCPServerStreamableHttp({
      url: http.url,
      name: "notes",
      fetch: governedFetch(async (input, init) => {
        if (typeof init?.body === "string" && init.body.includes('"append_log"')) {
          held.reached();
          await held.released;
        }
        return fetch(input, init);
      }),
    });
    const { write, second, run } = await writeHeldAtStop(server, held);
    expect(String(await second)).toContain("budget_exhausted");
    expect(run.ended).toBe(true);
    held.release();
    // Not refused: it went out before the stop, and the model gets what it did.
    const content = await write;
    expect(JSON.stringify(content)).toContain("Appended 1 line");
    expect(http.requests().filter((r) => r.tool === "append_log")).toEqual([
      { method: "tools/call", tool: "append_log", status: 200 },
    ]);
    expect(http.state.effects().filter((e) => e.tool === "append_log")).toHaveLength(1);
  });

  it("an attempt that went out before the stop may still send again (the transport's own resend after a 401)", async () => {
    // A 401 answers the write's first send; the transport asks its auth provider and sends the
    // request once more. The stop comes in between: the attempt was on the wire already (the
    // fetch cannot know that a 401 means the tool did not run), so its resend goes out and its
    // outcome is recorded, instead of a refusal that would leave a write in doubt.
    const http: HttpFaultServer = await startHttpServer({
      jsonResponse: true,
      httpFaults: [{ status: 401, tool: "append_log" }],
    });
    cleanup.push(() => http.close());
    const unauthorized = hold();
    const server = new MCPServerStreamableHttp({
      url: http.url,
      name: "notes",
      fetch: governedFetch(),
      authProvider: {
        token: async () => "token",
        onUnauthorized: async () => {
          unauthorized.reached();
          await unauthorized.released;
        },
      },
    });
    const { write, second, run } = await writeHeldAtStop(server, unauthorized);
    expect(String(await second)).toContain("budget_exhausted");
    expect(run.ended).toBe(true);
    unauthorized.release();
    const content = await write;
    expect(JSON.stringify(content)).toContain("Appended 1 line");
    expect(http.requests().filter((r) => r.tool === "append_log")).toEqual([
      { method: "tools/call", tool: "append_log", status: 401 },
      { method: "tools/call", tool: "append_log", status: 200 },
    ]);
    expect(http.state.effects().filter((e) => e.tool === "append_log")).toHaveLength(1);
  });
});

const WRITE_AND_READ = {
  get_note: { effect: "read_only" },
  append_log: { effect: "mutating" },
} as const;

/** Closes the client's transport: the SDK detaches it, and its next call reconnects itself. */
async function detachTransport(server: MCPServerStreamableHttp): Promise<void> {
  const session = (
    server as unknown as { underlying: { session: { transport?: { close(): Promise<void> } } } }
  ).underlying.session;
  await session.transport?.close();
}

/** The SDK's own `callToolResult` promises, to await their end instead of a while. */
function watchSdkCalls(server: MCPServerStreamableHttp): Promise<unknown>[] {
  const calls: Promise<unknown>[] = [];
  const own = server.callToolResult.bind(server);
  server.callToolResult = (...args: Parameters<typeof own>) => {
    const call = own(...args);
    calls.push(call);
    return call;
  };
  return calls;
}

/** A point a request waits at: `reachedOnce` when it got there, `release` lets it go on. */
function hold() {
  let reached!: () => void;
  const reachedOnce = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { reached, reachedOnce, release, released };
}
