/**
 * Langchain's prebuilt agent (`createAgent`, with a checkpointer) driven by a
 * {@link ScriptedChatModel}, for the LangChain tests: what the agent ended with, its messages
 * even when it threw.
 */
import type { BaseMessage } from "@langchain/core/messages";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { type AgentMiddleware, createAgent } from "langchain";
import { ScriptedChatModel, type ScriptedTurn } from "./scripted-chat-model.ts";

/** How `createAgent` ended: its messages, or what it threw. */
export interface Ended {
  readonly model: ScriptedChatModel;
  /** The agent's messages at the end (from its checkpointer when it threw). */
  readonly messages: readonly BaseMessage[];
  readonly error: unknown;
}

/** Runs the agent with `tools` and `middleware` on one user message, the model playing `script`. */
export async function runScriptedAgent(
  script: readonly ScriptedTurn[],
  tools: StructuredToolInterface[],
  middleware: AgentMiddleware[],
  user = "Do the task",
): Promise<Ended> {
  const model = new ScriptedChatModel(script);
  const agent = createAgent({ model, tools, middleware, checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: "t-1" } };
  try {
    const result = await agent.invoke({ messages: [{ role: "user", content: user }] }, config);
    return { model, messages: result.messages, error: undefined };
  } catch (error) {
    // The state saved before the stop: the stopping turn's tool messages are in it.
    const state = (await agent.getState(config)) as { values: { messages: BaseMessage[] } };
    return { model, messages: state.values.messages, error };
  }
}
