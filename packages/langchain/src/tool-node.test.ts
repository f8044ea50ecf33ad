import { createGovernor, type PolicyInput, type Run } from "@governor/core";
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import { type StructuredToolInterface, tool } from "@langchain/core/tools";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  call,
  ScriptedChatModel,
  type ScriptedTurn,
  say,
} from "../../../test/support/scripted-chat-model.ts";
import { governTools } from "./govern-tools.ts";
import { GovernorStopError, throwIfStopped } from "./stop.ts";
import { countUnknownToolCalls } from "./unknown-tools.ts";

const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";
const schema = z.object({ id: z.string() });

function governor(policy: PolicyInput = {}) {
  return createGovernor(policy, { metrics: false, random: () => 0.5 });
}

/**
 * The graph of LangGraph's own docs: a model node, a `ToolNode`, `toolsCondition`. With a run,
 * the model node starts with `throwIfStopped(run)`.
 */
function buildGraph(
  tools: StructuredToolInterface[],
  model: ScriptedChatModel,
  options: { run?: Run; handleToolErrors?: boolean } = {},
) {
  const { run, handleToolErrors } = options;
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => {
      if (run) throwIfStopped(run);
      return { messages: [await model.bindTools(tools).invoke(state.messages)] };
    })
    .addNode(
      "tools",
      new ToolNode(tools, handleToolErrors === undefined ? {} : { handleToolErrors }),
    )
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile();
}

async function invoke(graph: ReturnType<typeof buildGraph>) {
  try {
    const result = await graph.invoke({ messages: [{ role: "user", content: "Do it" }] });
    return { messages: result.messages as BaseMessage[], error: undefined as unknown };
  } catch (error) {
    return { messages: [] as BaseMessage[], error };
  }
}

const toolMessages = (model: ScriptedChatModel) => model.toolMessages();

describe("governTools with LangGraph's ToolNode", () => {
  const failing = () =>
    tool(
      async ({ id }) => {
        if (id === "welcome") return "Welcome!";
        throw new Error(`Note "${id}" not found (signed ${SECRET})`);
      },
      { name: "get_note", description: "Reads a note", schema },
    );
  const script: ScriptedTurn[] = [
    call("get_note", { id: "nope" }, "c1"),
    call("get_note", { id: "welcome" }, "c2"),
    say("done"),
  ];

  it.each([
    ["default (true)", undefined],
    ["false", false],
  ])(
    "handleToolErrors %s: the same Governor ToolMessage, never the raw error",
    async (_label, handleToolErrors) => {
      const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
      const model = new ScriptedChatModel(script);
      const tools = governTools([failing()], { run });
      const ended = await invoke(
        buildGraph(tools, model, {
          run,
          ...(handleToolErrors !== undefined && { handleToolErrors }),
        }),
      );
      expect(ended.error).toBeUndefined();
      const [first, second] = toolMessages(model);
      expect(first).toMatchObject({ status: "error", tool_call_id: "c1" });
      expect(String(first?.content)).toMatch(/^get_note: Note "nope" not found/);
      expect(String(first?.content)).not.toContain(SECRET);
      expect(second).toMatchObject({ status: "success", content: "Welcome!" });
      expect(ended.messages.at(-1)?.content).toBe("done");
      expect(model.boundTools).toEqual(["get_note"]);
    },
  );

  it("alone: handleToolErrors true shows the raw error; false throws it out of the graph", async () => {
    const shown = new ScriptedChatModel(script);
    const plain = await invoke(buildGraph([failing()], shown));
    expect(plain.error).toBeUndefined();
    expect(String(toolMessages(shown)[0]?.content)).toBe(
      `Error: Note "nope" not found (signed ${SECRET})\n Please fix your mistakes.`,
    );

    const thrown = await invoke(
      buildGraph([failing()], new ScriptedChatModel(script), {
        handleToolErrors: false,
      }),
    );
    expect(String((thrown.error as Error).message)).toContain(SECRET);
  });

  it("a stop in one of parallel calls: every call of the turn is answered, then the graph throws", async () => {
    const executed: string[] = [];
    const deleteNote = tool(
      async ({ id }) => {
        executed.push(`delete:${id}`);
        throw new Error("permission denied: cannot delete notes");
      },
      { name: "delete_note", description: "Deletes a note", schema },
    );
    const readNote = tool(
      async ({ id }) => {
        executed.push(`read:${id}`);
        return `note ${id}`;
      },
      { name: "read_note", description: "Reads a note", schema },
    );
    const run = governor({ tools: { read_note: { effect: "read_only" } } }).startRun();
    const model = new ScriptedChatModel([
      {
        calls: [
          { name: "delete_note", args: { id: "a" }, id: "c1" },
          { name: "read_note", args: { id: "b" }, id: "c2" },
        ],
      },
      say("never reached"),
    ]);
    const tools = governTools([deleteNote, readNote], { run });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => {
        throwIfStopped(run);
        return { messages: [await model.invoke(state.messages)] };
      })
      .addNode("tools", new ToolNode(tools))
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addEdge("tools", "agent")
      .compile({ checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "t-1" } };

    const error = await graph
      .invoke({ messages: [{ role: "user", content: "Delete a, read b" }] }, config)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(GovernorStopError);
    expect(error).toMatchObject({ reason: "forbidden", tool: "delete_note" });
    expect(model.turns).toHaveLength(1);
    expect(executed.filter((e) => e.startsWith("delete:"))).toEqual(["delete:a"]);

    // The checkpointed state holds an answer for each call of the stopping turn.
    const { values } = await graph.getState(config);
    const messages = (values as { messages: BaseMessage[] }).messages;
    const ai = messages.find((m): m is AIMessage => AIMessage.isInstance(m));
    const answers = messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    expect(ai?.tool_calls?.map((c) => c.id)).toEqual(["c1", "c2"]);
    expect(answers.map((m) => m.tool_call_id).sort()).toEqual(["c1", "c2"]);
    const stopped = answers.find((m) => m.tool_call_id === "c1");
    expect(stopped?.status).toBe("error");
    expect(String(stopped?.content)).toMatch(/^delete_note: permission denied/);
  });

  it("a model that keeps calling a tool that does not exist: countUnknownToolCalls in the model node stops it at the third", async () => {
    const getNote = tool(async () => "Welcome!", {
      name: "get_note",
      description: "Reads a note",
      schema,
    });
    const script = Array.from({ length: 12 }, (_, i) =>
      call("get_notes", { id: `n${i}` }, `c${i + 1}`),
    );
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const model = new ScriptedChatModel(script);
    const tools = governTools([getNote], { run });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => {
        throwIfStopped(run);
        const answer = await model.bindTools(tools).invoke(state.messages);
        await countUnknownToolCalls(run, tools, answer);
        return { messages: [answer] };
      })
      .addNode("tools", new ToolNode(tools))
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addEdge("tools", "agent")
      .compile();
    const ended = await invoke(graph as unknown as ReturnType<typeof buildGraph>);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect(ended.error).toMatchObject({ reason: "repeated_failure", tool: "get_notes" });
    expect(model.turns).toHaveLength(3);

    // The same graph without it: ToolNode answers every call, the graph's limit ends it.
    const alone = new ScriptedChatModel(script);
    const plain = await invoke(buildGraph([getNote], alone));
    expect(plain.error).toBeDefined();
    expect(alone.turns.length).toBeGreaterThan(10);
  });
});
