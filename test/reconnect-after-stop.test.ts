/**
 * A governed call that waits for a reconnect before it sends anything (`ctx.beforeSending`) is
 * not sent once the reconnect is done when its run ended meanwhile by a stop Governor decided
 * (here the calls budget, spent by a parallel call): it sent nothing, so nothing is left in doubt,
 * and the call ends with the run's reason and says it was not made (found by an attack on "a call
 * never outlives its run"; the first test fails before the fix). The second test guards the
 * host's end of the run during the same wait, which the client's bounded reconnect already kept.
 */
import { createGovernor, type Run } from "@governor/core";
import { governClient } from "@governor/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";

interface Executed {
  readonly tool: string;
  readonly runEnded: boolean;
}

function makeServer(executed: Executed[], runOf: () => Run | undefined): McpServer {
  const server = new McpServer({ name: "notes", version: "1.0.0" });
  server.registerTool(
    "create_note",
    { description: "Creates a note", inputSchema: { title: z.string() } },
    async ({ title }) => {
      executed.push({ tool: "create_note", runEnded: runOf()?.ended ?? false });
      return { content: [{ type: "text", text: `created ${title}` }] };
    },
  );
  server.registerTool(
    "get_note",
    { description: "Reads a note", inputSchema: { id: z.string() } },
    async ({ id }) => {
      executed.push({ tool: "get_note", runEnded: runOf()?.ended ?? false });
      return { content: [{ type: "text", text: `note ${id}` }] };
    },
  );
  return server;
}

async function connect(client: Client, server: McpServer): Promise<void> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
}

/**
 * A governed client whose connection went away, with a reconnect that waits for `release` and
 * does not heed its signal; a write of a new run is waiting for it when this answers.
 */
async function writeWaitingForReconnect() {
  const executed: Executed[] = [];
  let run: Run | undefined;
  const governor = createGovernor(
    {
      budgets: { calls: 1 },
      servers: {
        notes: {
          tools: { create_note: { effect: "mutating" }, get_note: { effect: "read_only" } },
        },
      },
    },
    { metrics: false },
  );
  const client = new Client({ name: "reconnect-after-stop", version: "0.0.0" });
  await connect(
    client,
    makeServer(executed, () => run),
  );
  // The connection went away (the host closed it, the server died): the next call reconnects.
  await client.close();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: () => void;
  const reconnecting = new Promise<void>((resolve) => {
    started = resolve;
  });
  const governed = governClient(client, {
    governor,
    server: "notes",
    reconnect: async () => {
      started();
      await gate;
      await connect(
        client,
        makeServer(executed, () => run),
      );
    },
  });
  run = governor.startRun();
  const write = governed.callTool(run, { name: "create_note", arguments: { title: "a" } });
  await reconnecting;
  return { executed, run, governed, write, release, close: () => client.close() };
}

describe("a reconnect wait that outlasts its run", () => {
  it("a write waiting for a reconnect is not sent after a Governor stop ended its run", async () => {
    const { executed, run, governed, write, release, close } = await writeWaitingForReconnect();
    // A second call of the run finds the calls budget spent: the run stops (budget_exhausted).
    const second = await governed.callTool(run, { name: "get_note", arguments: { id: "x" } });
    expect(second.kind).toBe("stop");
    expect(run.summary().reason).toBe("budget_exhausted");

    release();
    const outcome = await write;
    await new Promise((resolve) => setTimeout(resolve, 50));

    // Nothing was sent for the write before its run ended: it is not sent now.
    expect(executed).toEqual([]);
    expect(outcome.kind).toBe("stop");
    if (outcome.kind !== "stop") return;
    expect(outcome.reason).toBe("budget_exhausted");
    expect(outcome.result.content[0].text).toContain("not made");
    expect(outcome.result.content[0].text).not.toContain("may have");
    await close();
  });

  it("nor after the host ended the run while the reconnect still ran", async () => {
    const { executed, run, write, release, close } = await writeWaitingForReconnect();
    run.end();
    const outcome = await write;
    expect(outcome.kind).toBe("stop");
    if (outcome.kind === "stop") expect(outcome.reason).toBe("aborted");

    release();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(executed).toEqual([]);
    await close();
  });
});
