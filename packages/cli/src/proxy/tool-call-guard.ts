/**
 * Answers a `tools/call` with bad params (-32602, one short sentence) before the SDK validates it,
 * which answers -32603 with a dump of its schema's issues. For a host transport that is not the
 * proxy's own stdio (host-stdio.ts checks these itself): Streamable HTTP.
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { INVALID_PARAMS, toolCallParamsProblem } from "./jsonrpc-envelope.ts";

/** Wraps `transport.onmessage` (set by `server.connect`): call it after connecting. */
export function answerBadToolCalls(
  transport: Transport,
  onProblem: (message: string) => void,
): void {
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ("method" in message && message.method === "tools/call" && "id" in message) {
      const problem = toolCallParamsProblem(message.params);
      if (problem !== undefined) {
        const text = `Invalid params: ${problem}`;
        onProblem(
          `invalid params: ${text} (answered ${INVALID_PARAMS}, id ${JSON.stringify(message.id)})`,
        );
        transport
          .send(
            { jsonrpc: "2.0", id: message.id, error: { code: INVALID_PARAMS, message: text } },
            { relatedRequestId: message.id },
          )
          .catch(() => undefined);
        return;
      }
    }
    inner?.(message, extra);
  };
}
