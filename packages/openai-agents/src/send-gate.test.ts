import type { AttemptContext, Run } from "@governor/core";
import { describe, expect, it } from "vitest";
import { governedFetch, withAttemptSends } from "./send-gate.ts";

/** A JSON-RPC POST as the MCP transport makes it. */
function post(message: unknown): RequestInit {
  return { method: "POST", body: JSON.stringify(message) };
}

const CALL = post({
  jsonrpc: "2.0",
  id: 3,
  method: "tools/call",
  params: { name: "append_log", arguments: { line: "a" } },
});

/**
 * An attempt whose `beforeSending` answers as `answer` says (resolving lets it send), counting
 * how often it was asked; `run.ended` as the test sets it.
 */
function attempt(answer: (asked: number) => Promise<void> = async () => undefined) {
  const run = { ended: false };
  let asked = 0;
  const ctx = {
    beforeSending: <R>(wait: Promise<R>) =>
      wait.then(async (value) => {
        asked += 1;
        await answer(asked);
        return value;
      }),
  };
  return {
    run,
    asked: () => asked,
    within: <T>(send: () => Promise<T>) =>
      withAttemptSends(ctx as unknown as AttemptContext, run as unknown as Run, "append_log", send),
  };
}

/** A fetch that records what it was handed and answers 200. */
function recording() {
  const handed: RequestInit[] = [];
  const inner = (async (_input: unknown, init?: RequestInit) => {
    handed.push(init ?? {});
    return new Response("{}", { status: 200 });
  }) as typeof fetch;
  return { handed, inner };
}

describe("governedFetch", () => {
  it("asks before an attempt's first tools/call only, and hands every request on", async () => {
    const { handed, inner } = recording();
    const gated = governedFetch(inner);
    const a = attempt();
    await a.within(async () => {
      await gated("http://x/mcp", post({ jsonrpc: "2.0", id: 1, method: "initialize" }));
      expect(a.asked()).toBe(0);
      await gated("http://x/mcp", CALL);
      expect(a.asked()).toBe(1);
      // The attempt went out: its later requests (a resend after a 401) are not asked about.
      await gated("http://x/mcp", CALL);
      await gated("http://x/mcp", { method: "GET" });
    });
    expect(a.asked()).toBe(1);
    expect(handed).toHaveLength(4);
  });

  it("sends nothing when the attempt may no longer send", async () => {
    const { handed, inner } = recording();
    const gated = governedFetch(inner);
    const refused = new Error("The run has ended");
    const a = attempt(async () => {
      throw refused;
    });
    await expect(a.within(() => gated("http://x/mcp", CALL))).rejects.toBe(refused);
    expect(handed).toEqual([]);
  });

  it("asks again when a stop ended the run after its answer, before the request was handed on", async () => {
    const { handed, inner } = recording();
    const gated = governedFetch(inner);
    const refused = new Error("The run has ended");
    const a = attempt(async (asked) => {
      if (asked > 1) throw refused;
      // The run ends after this check, before the fetch reads the answer.
      queueMicrotask(() => {
        a.run.ended = true;
      });
    });
    await expect(a.within(() => gated("http://x/mcp", CALL))).rejects.toBe(refused);
    expect(a.asked()).toBe(2);
    expect(handed).toEqual([]);
  });

  it("leaves requests alone outside a governed attempt, and other tools' calls within one", async () => {
    const { handed, inner } = recording();
    const gated = governedFetch(inner);
    await gated("http://x/mcp", CALL);
    const a = attempt(async () => {
      throw new Error("not this one");
    });
    await a.within(() =>
      gated(
        "http://x/mcp",
        post({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "get_note" } }),
      ),
    );
    await a.within(() => gated("http://x/mcp", { method: "POST", body: "not json" }));
    expect(a.asked()).toBe(0);
    expect(handed).toHaveLength(3);
  });

  it("finds the call in a batch", async () => {
    const { handed, inner } = recording();
    const gated = governedFetch(inner);
    const a = attempt(async () => {
      throw new Error("refused");
    });
    const batch = post([
      { jsonrpc: "2.0", method: "notifications/progress" },
      { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "append_log" } },
    ]);
    await expect(a.within(() => gated("http://x/mcp", batch))).rejects.toThrow("refused");
    expect(handed).toEqual([]);
  });

  it("refuses an inner fetch that is not a function, naming the field", () => {
    expect(() => governedFetch("fetch" as never)).toThrow(
      expect.objectContaining({ code: "invalid_options", message: expect.stringMatching(/inner/) }),
    );
  });
});
