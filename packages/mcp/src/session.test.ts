import { describe, expect, it } from "vitest";
import type { McpClient } from "./sdk.ts";
import { createSession } from "./session.ts";

/** The session's bookkeeping against a client stand-in (the real SDK: test/mcp-reconnect.test.ts). */
function fakeClient() {
  const events: string[] = [];
  const client: McpClient & { transport: object | undefined } = {
    transport: { id: 1 },
    close: async () => {
      events.push("close");
      client.transport = undefined;
    },
  };
  return { client, events };
}

describe("createSession", () => {
  it("counts requests in flight per transport; leaving twice counts once", () => {
    const { client } = fakeClient();
    const session = createSession(client, {
      reconnect: undefined,
      limitMs: 1000,
      describe: String,
    });
    const a = session.enter(client.transport);
    const b = session.enter(client.transport);
    expect(session.inFlight()).toBe(2);
    session.leave(a);
    session.leave(a);
    expect(session.inFlight()).toBe(1);
    session.leave(b);
    expect(session.inFlight()).toBe(0);
    // Without a transport nothing is counted.
    session.leave(session.enter(undefined));
    expect(session.inFlight()).toBe(0);
    expect(session.ready()).toBe(true);
  });

  it("a gone session is closed only after its calls in flight left, then reconnected; not waited for once they all left", async () => {
    const { client, events } = fakeClient();
    const session = createSession(client, {
      reconnect: async () => {
        events.push("reconnect");
        client.transport = { id: 2 };
      },
      limitMs: 60_000,
      describe: String,
    });
    const old = client.transport;
    // A request that came and went: its transport's entry stays at 0 and must not be waited for.
    session.leave(session.enter(old));
    const out = session.enter(old);
    session.gone(old);
    expect(session.ready()).toBe(false);
    const ensured = session.ensure(new AbortController().signal);
    await new Promise((r) => setTimeout(r, 20));
    expect(events).toEqual([]);
    session.leave(out);
    await ensured;
    expect(events).toEqual(["close", "reconnect"]);
    expect(session.ready()).toBe(true);

    // The new transport: one request came and went, then its session is gone too.
    const next = client.transport;
    session.leave(session.enter(next));
    session.gone(next);
    await session.ensure(new AbortController().signal);
    expect(events).toEqual(["close", "reconnect", "close", "reconnect"]);
  });
});
