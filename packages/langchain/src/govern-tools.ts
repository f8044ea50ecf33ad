import { type CallOutcome, GovernorError, type ToolCall } from "@governor/core";
import { isDeliverable, undeliverableText } from "@governor/core/judge";
import { ToolMessage } from "@langchain/core/messages";
import type { StructuredToolInterface, ToolSchemaBase } from "@langchain/core/tools";
import {
  checkGovernOptions,
  GovernedTool,
  type GovernOptions,
  type Perform,
  ToolThrew,
} from "./governed-tool.ts";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An MCP `CallToolResult` that is a failure (`isError: true`). */
function isErrorResult(value: unknown): boolean {
  return isRecord(value) && value.isError === true;
}

/** The text of a ToolMessage's content (strings and text blocks). */
function messageText(message: ToolMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  return content
    .map((block) => (block.type === "text" && typeof block.text === "string" ? block.text : ""))
    .join("\n");
}

/** A tool's own output before LangChain formats it: what its `_call` returned. */
type Seen = { value: unknown } | undefined;

/**
 * The tool to invoke for one attempt, and what its `_call` returned once it ran. LangChain turns a
 * tool's output into the tool call's `ToolMessage` inside the tool (`JSON.stringify`, or
 * `String(value)`, "[object Object]", when that throws), so the output itself is read here: the
 * tool is invoked through an object that inherits everything from it but `_call`, which calls the
 * tool's own `_call` on the tool and notes what it returned. A tool with no `_call` of its own to
 * read (a runnable made a tool, a tool overriding `call`) is invoked as it is, and nothing is seen.
 */
function watched(tool: StructuredToolInterface): {
  readonly tool: StructuredToolInterface;
  readonly seen: () => Seen;
} {
  const own = (tool as { _call?: unknown })._call;
  if (typeof own !== "function") return { tool, seen: () => undefined };
  let seen: Seen;
  const probe = Object.create(tool) as StructuredToolInterface & { _call: unknown };
  probe._call = async (...args: unknown[]): Promise<unknown> => {
    const value: unknown = await own.apply(tool, args);
    // A streamed result (an async generator) is LangChain's to consume: not read here.
    const streamed =
      typeof value === "object" &&
      value !== null &&
      typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function";
    if (!streamed) seen = { value };
    return value;
  };
  return { tool: probe, seen: () => seen };
}

/** What of a tool's output the model reads: the content of a `content_and_artifact` pair. */
function shownPart(tool: StructuredToolInterface, value: unknown): unknown {
  const pair = (tool as { responseFormat?: unknown }).responseFormat === "content_and_artifact";
  return pair && Array.isArray(value) && value.length === 2 ? value[0] : value;
}

/**
 * Wraps a LangChain tool (`tool()`, a `StructuredTool`, a `DynamicStructuredTool`) so every call
 * goes through a Governor run. The model sees the same name, description and schema.
 *
 * - The tool call's `id` is the call's `callId`: a mutating call keeps one idempotency key across
 *   retries, and a run in the same `idempotencyScope` replaying that call gets the recorded
 *   result. Each attempt receives the arguments with the key in the policy's key argument
 *   (declare it in the tool's schema, or a zod object strips it) and a `signal` the run aborts.
 * - The tool checks its input inside the run: a bad input is a failure Governor counts (budgets,
 *   repeat rule) and answers with its own short text, not the schema error with the input.
 * - `ok` returns the tool's own output (a `ToolMessage` when invoked with a tool call); a
 *   failure the model can fix, and a stop, return an error `ToolMessage` with Governor's text.
 *   Nothing is thrown, so `ToolNode`'s `handleToolErrors` never formats a raw error.
 * - A tool that returns an error `ToolMessage` itself is judged like one that threw.
 * @example
 * const run = governor.startRun();
 * const tools = governTools([getNote, sendEmail], { run });
 * const graph = createAgent({ model, tools, middleware: [governorMiddleware(run)] });
 */
export function governTool(tool: StructuredToolInterface, options: GovernOptions): GovernedTool {
  checkGovernOptions("governTool", options);
  if (typeof tool?.invoke !== "function" || typeof tool.name !== "string") {
    throw new GovernorError(
      "invalid_options",
      "governTool: tool must be a LangChain tool (tool(), a StructuredTool), with a name and invoke().",
    );
  }
  const { run, server } = options;
  const perform: Perform = ({ args, toolCall, config }) => {
    // Governor keys calls by named arguments; a tool whose input is not an object is governed
    // under `{ input }` and still receives its input as it came.
    const object = isRecord(args);
    const call: ToolCall = {
      tool: tool.name,
      ...(server !== undefined && { server }),
      args: object ? args : { input: args },
      ...(toolCall?.id !== undefined && { callId: toolCall.id }),
      ...(config.signal !== undefined && { signal: config.signal }),
    };
    // What the tool itself threw, or the error message it returned: observe-only hands it back
    // from run.call as it is, and the graph gets it as without Governor.
    let threw: { readonly error: unknown; readonly returned?: ToolMessage } | undefined;
    return run
      .call(call, async (ctx) => {
        const attemptArgs = object ? ctx.args : args;
        const input = toolCall ? { ...toolCall, args: attemptArgs } : attemptArgs;
        let output: unknown;
        const attempt = watched(tool);
        try {
          // The attempt's signal aborts with the run, its deadline and the graph's own signal.
          output = await attempt.tool.invoke(input as never, { ...config, signal: ctx.signal });
        } catch (error) {
          threw = { error };
          throw error;
        }
        if (ToolMessage.isInstance(output) && output.status === "error") {
          const error = new Error(messageText(output));
          threw = { error, returned: output };
          throw error;
        }
        // A success nested too deep to hand over (as every surface judges it, deliverable.ts):
        // the model reads that the call was made, never "[object Object]" or a text it cannot
        // read, and this is the success the run keeps. It is no failure: nothing is retried.
        const seen = attempt.seen();
        if (seen === undefined) return output;
        const shown = shownPart(tool, seen.value);
        // An MCP result the tool handed back as it came, `isError: true`: handed to the run as it
        // is, which judges it as every surface judges a failure (LangChain would write its JSON,
        // secrets and all, as the ToolMessage's content).
        if (isErrorResult(shown)) return shown;
        if (!isDeliverable(shown)) {
          const text = undeliverableText(tool.name);
          if (toolCall?.id === undefined) return text;
          return new ToolMessage({
            status: "error",
            content: text,
            name: tool.name,
            tool_call_id: toolCall.id,
          });
        }
        return output;
      })
      .catch((err: unknown): CallOutcome<unknown> => {
        // Enforcing, run.call never rejects with the tool's own error.
        if (threw === undefined || err !== threw.error) throw err;
        if (threw.returned === undefined) throw new ToolThrew(err);
        return { kind: "ok", value: threw.returned, attempts: 1, replayed: false };
      });
  };
  return new GovernedTool(
    {
      name: tool.name,
      description: tool.description,
      schema: tool.schema as ToolSchemaBase,
      returnDirect: tool.returnDirect,
    },
    perform,
    options,
  );
}

/** {@link governTool} for each tool of a list, all in the same run. */
export function governTools(
  tools: readonly StructuredToolInterface[],
  options: GovernOptions,
): GovernedTool[] {
  checkGovernOptions("governTools", options);
  return tools.map((tool) => governTool(tool, options));
}
