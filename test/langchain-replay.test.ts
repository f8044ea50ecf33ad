import { randomUUID } from "node:crypto";
import { createGovernor, createMemoryStore, type PolicyInput, type Store } from "@governor/core";
import { replayedText } from "@governor/core/judge";
import { governTools } from "@governor/langchain";
import { governorMiddleware } from "@governor/langchain/agent";
import { createRedisStore } from "@governor/redis";
import { ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { Command, MemorySaver } from "@langchain/langgraph";
import { createAgent } from "langchain";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { call, ScriptedChatModel, say } from "./support/scripted-chat-model.ts";

/**
 * A governed LangChain write done before and answered by the ledger (another run in the same
 * idempotency scope took the same tool call): the model reads a tool message for this call, never
 * `undefined` or LangChain's serialised JSON of the first call's message.
 */

const redis = await sharedRedis("LangChain replays from Redis");

const USER = { messages: [{ role: "user", content: "Send it" }] };

function sendEmailTool(sent: string[]) {
  return tool(
    async ({ to }) => {
      sent.push(to);
      return `sent to ${to}`;
    },
    {
      name: "send_email",
      description: "Sends an email",
      schema: z.object({ to: z.string() }),
    },
  );
}

/** One agent task in a fresh run of `scope`: the model sends one email with call id c1. */
async function sendOnce(
  policy: PolicyInput,
  store: Store | undefined,
  sent: string[],
): Promise<ToolMessage> {
  const governor = createGovernor(policy, { metrics: false, ...(store && { store }) });
  const run = governor.startRun({ idempotencyScope: "job-1" });
  const model = new ScriptedChatModel([
    call("send_email", { to: "a@example.com" }, "c1"),
    say("ok"),
  ]);
  const agent = createAgent({
    model,
    tools: governTools([sendEmailTool(sent)], { run }),
    middleware: [governorMiddleware(run)],
    checkpointer: new MemorySaver(),
  });
  await agent.invoke(USER, { configurable: { thread_id: randomUUID() } });
  run.end();
  const [message] = model.toolMessages();
  if (message === undefined) throw new Error("the model was shown no tool message");
  return message;
}

describe("governTools: a replayed write", () => {
  it("with no result kept (idempotency.replay: false): the model reads that it was done, not undefined", async () => {
    const policy: PolicyInput = {
      tools: { send_email: { effect: "mutating", idempotency: { replay: false } } },
    };
    const sent: string[] = [];
    const store = createMemoryStore();
    const first = await sendOnce(policy, store, sent);
    expect(first.content).toBe("sent to a@example.com");
    const replayed = await sendOnce(policy, store, sent);
    expect(sent).toEqual(["a@example.com"]);
    expect(replayed.status).toBe("success");
    expect(replayed.tool_call_id).toBe("c1");
    expect(replayed.content).toBe(replayedText("send_email"));
  });

  it.each([
    ["an object", (messages: ToolMessage[]) => ({ messages })],
    ["[key, value] pairs", (messages: ToolMessage[]) => [["messages", messages]]],
  ])(
    "a tool that answers with a LangGraph Command (update as %s): the replay is that Command again, not its JSON",
    async (_form, update) => {
      // A tool may answer with `new Command({ update })` to update the graph's state (its tool
      // message in `update.messages`). The store keeps it as JSON (`{"lg_name":"Command",…}`, the
      // messages in LangChain's serialised form): ToolNode took that for a plain output, showed the
      // model the JSON and dropped the update.
      const governor = createGovernor(
        { tools: { book: { effect: "mutating" } } },
        { metrics: false, store: createMemoryStore() },
      );
      let booked = 0;
      const book = tool(
        async ({ room }, config) => {
          booked += 1;
          const message = new ToolMessage({
            content: `booked room ${room}`,
            name: "book",
            tool_call_id: config.toolCall?.id ?? "",
          });
          return new Command({ update: update([message]) as Record<string, unknown> });
        },
        { name: "book", description: "Books a room", schema: z.object({ room: z.string() }) },
      );
      const job = async () => {
        const run = governor.startRun({ idempotencyScope: "job-2" });
        const model = new ScriptedChatModel([call("book", { room: "a" }, "c1"), say("ok")]);
        const agent = createAgent({
          model,
          tools: governTools([book], { run }),
          middleware: [governorMiddleware(run)],
          checkpointer: new MemorySaver(),
        });
        await agent.invoke(
          { messages: [{ role: "user", content: "Book room a" }] },
          { configurable: { thread_id: randomUUID() } },
        );
        run.end();
        return model.toolMessages().map((m) => ({ id: m.tool_call_id, content: m.content }));
      };
      expect(await job()).toEqual([{ id: "c1", content: "booked room a" }]);
      expect(await job()).toEqual([{ id: "c1", content: "booked room a" }]);
      expect(booked).toBe(1);
    },
  );

  describe.runIf(redis.url !== undefined)("kept in Redis (a result kept as JSON)", () => {
    const stores: { close(): Promise<void> }[] = [];
    afterAll(async () => {
      await Promise.all(stores.map((s) => s.close()));
    });

    it("the model reads the first call's content again, not LangChain's serialised message", async () => {
      const store = createRedisStore({
        url: redis.url as string,
        prefix: `lc-replay-${randomUUID()}:`,
      });
      stores.push(store);
      const policy: PolicyInput = { tools: { send_email: { effect: "mutating" } } };
      const sent: string[] = [];
      const first = await sendOnce(policy, store, sent);
      const replayed = await sendOnce(policy, store, sent);
      expect(sent).toEqual(["a@example.com"]);
      expect(first.content).toBe("sent to a@example.com");
      expect(replayed.content).toBe("sent to a@example.com");
      expect(replayed.status).toBe("success");
      expect(replayed.tool_call_id).toBe("c1");
    });
  });
});
