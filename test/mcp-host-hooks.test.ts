/**
 * The governed client's `onTransportError` is the host's code, called from inside the MCP SDK's
 * own handlers (`onclose`, `onerror`). A hook that throws must not break the client: over real
 * stdio with both SDK generations, a call in flight when the connection closes still ends at once,
 * and a report of a line that is not JSON raises no uncaught exception (which ends a Node process).
 */
import { describe, expect, it } from "vitest";
import { openPerTest, SDKS } from "./mcp-support.ts";

const HOOK_BUG = "onTransportError bug";
const throwing = {
  clientOptions: {
    onTransportError: () => {
      throw new Error(HOOK_BUG);
    },
  },
};

/**
 * Runs `body`, then waits a turn (the client forwards reports on the next one): answers the
 * messages of every uncaught exception and unhandled rejection meanwhile.
 */
async function uncaughtDuring(body: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const note = (error: unknown) => void seen.push(String((error as Error)?.message));
  process.on("uncaughtException", note);
  process.on("unhandledRejection", note);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    process.off("uncaughtException", note);
    process.off("unhandledRejection", note);
  }
  return seen;
}

describe.each(SDKS)("%s over stdio", (sdk) => {
  const open = openPerTest({ sdk, effects: false });

  it("a throwing onTransportError: a call in flight when the connection closes ends with it, not at the deadline", async () => {
    const { g } = await open(
      "stdio",
      {},
      {
        ...throwing,
        // A deadline the call would otherwise wait for: the SDK rejects the calls it had out only
        // after its onclose handler returns.
        policy: { budgets: { wallTimeMs: 5_000 } },
      },
    );
    const run = g.governor.startRun();
    const uncaught = await uncaughtDuring(async () => {
      const pending = g.governed.callTool(run, { name: "slow", arguments: { ms: 30_000 } });
      setTimeout(() => void g.client.close(), 200);
      expect((await pending).kind).toBe("stop");
    });
    expect(uncaught).not.toContain(HOOK_BUG);
    expect(run.summary().reason).not.toBe("deadline_exceeded");
    // 1.32 rejects it with the close; 2.x's retry after the close finds the client not connected.
    expect(run.summary().lastFailure?.text).toMatch(/Connection closed|Not connected/);
  });

  it.runIf(sdk === "v1")(
    "a throwing onTransportError on an onerror report raises no uncaught exception",
    async () => {
      const { g } = await open("stdio", {}, throwing);
      const run = g.governor.startRun();
      const uncaught = await uncaughtDuring(async () => {
        // A line on stdout that is not JSON: the SDK reports it to onerror, no call claims it.
        const outcome = await g.governed.callTool(run, {
          name: "junk_stdout",
          arguments: {},
          timeoutMs: 150,
        });
        expect(outcome.kind).toBe("stop");
      });
      expect(uncaught).not.toContain(HOOK_BUG);
    },
  );
});
