import type { Failure, Run } from "@governor/core";
import { recordStop } from "./stop.ts";

/** A tool call as the model's message carries it. */
export interface ModelToolCall {
  readonly name: string;
  readonly args?: unknown;
  readonly id?: string | undefined;
}

/** Thrown by the stand-in executor of a call to a tool that does not exist. */
class NoSuchTool extends Error {
  constructor(readonly failure: Failure) {
    super(failure.text);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A tool's name, when it has one (a provider's built-in tool may be a plain definition). */
function nameOf(tool: unknown): string | undefined {
  if (!isRecord(tool) && typeof tool !== "function") return undefined;
  const name = (tool as { name?: unknown }).name;
  return typeof name === "string" ? name : undefined;
}

/**
 * The calls of a model's answer to tools it was not given: `ToolNode` answers those itself ("Tool
 * X does not exist"), so no governed tool sees them and nothing bounded them (issue 29: the run
 * went to the model's limit).
 */
export function unknownCalls(
  tools: readonly unknown[],
  calls: readonly ModelToolCall[] | undefined,
): ModelToolCall[] {
  if (calls === undefined || calls.length === 0) return [];
  const known = new Set<string>();
  for (const tool of tools) {
    const name = nameOf(tool);
    if (name !== undefined) known.add(name);
  }
  return calls.filter((call) => !known.has(call.name));
}

/**
 * Counts a call to a tool that does not exist as a failed call of the run, as the AI SDK adapter's
 * repair hook does: what a server answers with JSON-RPC -32601 `Unknown tool`, which Governor
 * judges `switch_tool` / `unknown_tool`, so its repeat rule (`maxRepeats`, `repeated_failure`) and
 * budgets bound it. Nothing is executed and the model's answer is left as `ToolNode` gives it;
 * when Governor stops, the stop is recorded for the next turn's `GovernorStopError`.
 */
export async function countUnknownCall(run: Run, call: ModelToolCall): Promise<void> {
  if (run.ended) return;
  const failure: Failure = {
    channel: "protocol",
    origin: "peer",
    code: -32601,
    text: `Unknown tool: ${call.name}`,
  };
  try {
    const outcome = await run.call(
      {
        tool: call.name,
        args: isRecord(call.args) ? call.args : {},
        ...(call.id !== undefined && { callId: call.id }),
        toFailure: (thrown) => (thrown instanceof NoSuchTool ? thrown.failure : failure),
      },
      () => Promise.reject(new NoSuchTool(failure)),
    );
    if (outcome.kind === "stop") {
      recordStop(run, {
        tool: call.name,
        reason: outcome.reason,
        personResolvable: outcome.personResolvable,
        text: outcome.result.content[0].text,
        idempotencyKey: outcome.idempotencyKey,
        hostError: outcome.hostError,
      });
    }
  } catch {
    // A run that rejects (a failing store) has ended; the next turn's check throws. Nothing here
    // may break the agent's loop.
  }
}

/**
 * Counts the calls of a model's answer to tools it was not given as failed calls of the run
 * (`unknown_tool`), as `governorMiddleware` does in `createAgent`: for a graph of your own, call it
 * in the model node with the tools bound to the model and its answer. `ToolNode` answers such a
 * call itself, so without this no governed tool sees it; with it, Governor's repeat rule stops a
 * model that keeps calling one (the third, `repeated_failure`) and `throwIfStopped` ends the graph
 * at the next turn.
 * @example
 * .addNode("agent", async (state) => {
 *   throwIfStopped(run);
 *   const answer = await model.bindTools(tools).invoke(state.messages);
 *   await countUnknownToolCalls(run, tools, answer);
 *   return { messages: [answer] };
 * })
 */
export async function countUnknownToolCalls(
  run: Run,
  tools: readonly unknown[],
  answer: { readonly tool_calls?: readonly ModelToolCall[] | undefined },
): Promise<void> {
  for (const call of unknownCalls(tools, answer.tool_calls)) await countUnknownCall(run, call);
}
