/**
 * A chat model of LangChain's own model interface (`BaseChatModel`) that plays a script: each
 * turn returns the next step (tool calls or a text answer) and records the messages it was
 * given, so tests read exactly what the model saw. No network.
 */
import { BaseChatModel, type BindToolsInput } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";

/** One tool call of a scripted turn. */
export interface ScriptedCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly id: string;
}

/** A scripted turn: tool calls (made together), or a final text answer. */
export type ScriptedTurn = { readonly calls: readonly ScriptedCall[] } | { readonly text: string };

export const call = (name: string, args: Record<string, unknown>, id: string): ScriptedTurn => ({
  calls: [{ name, args, id }],
});
export const say = (text: string): ScriptedTurn => ({ text });

export class ScriptedChatModel extends BaseChatModel {
  /** The messages of each turn, in order. */
  readonly turns: BaseMessage[][] = [];
  /** The names of the tools bound to the model (what the model was offered). */
  boundTools: string[] = [];
  readonly #script: readonly ScriptedTurn[];

  constructor(script: readonly ScriptedTurn[]) {
    super({});
    this.#script = script;
  }

  _llmType(): string {
    return "scripted";
  }

  override bindTools(tools: BindToolsInput[]): this {
    this.boundTools = tools.map((t) => String((t as { name?: unknown }).name));
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.turns.push([...messages]);
    const turn = this.#script[this.turns.length - 1] ?? { text: "(end of script)" };
    const message =
      "text" in turn
        ? new AIMessage(turn.text)
        : new AIMessage({
            content: "",
            tool_calls: turn.calls.map((c) => ({ ...c, type: "tool_call" as const })),
          });
    return { generations: [{ text: "text" in turn ? turn.text : "", message }] };
  }

  /** The tool messages the model was shown, over all its turns (each once). */
  toolMessages(): ToolMessage[] {
    const last = this.turns.at(-1) ?? [];
    return last.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  }
}
