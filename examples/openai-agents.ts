import { createGovernor } from "@governor/core";
import { governedTool, governMcpServer, governorStopOf } from "@governor/openai-agents";
import { Agent, type MCPServer, type Model, run } from "@openai/agents";
import { z } from "zod";

// One governor per policy, for the whole process.
const governor = createGovernor({
  tools: { get_order: { effect: "read_only" } },
  servers: {
    notes: { tools: { create_note: { effect: "mutating", idempotency: { honorsKeys: true } } } },
  },
});

// Stands in for your database.
const orders = new Map([["A-1001", "2 items, shipped"]]);

/** One agent task: a Governor run of its own, its tools and MCP servers governed by it. */
export async function runTask(input: string, notes: MCPServer, model: string | Model = "gpt-5.1") {
  const governorRun = governor.startRun();
  const getOrder = governedTool(
    {
      name: "get_order",
      description: "Reads an order by id",
      parameters: z.object({ id: z.string() }),
      execute: async ({ id }) => {
        const order = orders.get(id);
        if (order === undefined) throw new Error(`no order with id "${id}"; ids look like A-1001`);
        return order;
      },
    },
    { run: governorRun },
  );
  const agent = new Agent({
    name: "assistant",
    instructions: "Answer with the tools.",
    model,
    tools: [getOrder],
    // Connect (and close) the server itself as usual; the wrapper is per run.
    mcpServers: [governMcpServer(notes, { governor, run: governorRun })],
  });
  try {
    const result = await run(agent, input, { maxTurns: 10 });
    return { output: result.finalOutput, summary: governorRun.end() };
  } catch (error) {
    const stop = governorStopOf(error);
    if (!stop) throw error; // a HostError (a JSON-RPC error, the store) or the SDK's own error
    // A write that may have happened names its key: settle it once someone checked.
    return { stopped: stop.reason, key: stop.idempotencyKey, summary: governorRun.end() };
  }
}
