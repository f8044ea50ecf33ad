import { isDeliverable, MAX_RESULT_DEPTH, undeliverableText } from "@governor/core/judge";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export { MAX_RESULT_DEPTH };

/**
 * A tool's successful result as it can be handed over: itself, or, when it nests objects and
 * arrays deeper than {@link MAX_RESULT_DEPTH} levels (which the host's `JSON.stringify` or a
 * proxy's wire encoder cannot write), an `isError` result saying the call was made and
 * succeeded, so the model does not make it again. `governClient`'s `callTool` (and with it
 * `governor proxy` and the LangChain adapter) and the OpenAI Agents `governMcpServer` answer with
 * it; call it yourself on results you hand over without them.
 */
export function deliverableResult(result: CallToolResult, tool: string): CallToolResult {
  if (isDeliverable(result)) return result;
  return { content: [{ type: "text", text: undeliverableText(tool) }], isError: true };
}
