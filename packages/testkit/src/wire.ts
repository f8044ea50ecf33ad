import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";

/** The result that replaces a response marked malformed: it fails the SDK's CallToolResult schema. */
export const MALFORMED_RESULT = Object.freeze({ content: "not an array" });

interface Connectable {
  connect(transport: Transport): Promise<void>;
}

/**
 * Makes `target.connect` patch each transport's `send` so that responses to the request ids in
 * the returned set go out as {@link MALFORMED_RESULT}. The SDK's `Server` validates tool results
 * before sending them, so a malformed result can only be produced below it, on the transport.
 */
export function installResponseMangler(target: Connectable): Set<RequestId> {
  const ids = new Set<RequestId>();
  const connect = target.connect.bind(target);
  target.connect = async (transport: Transport) => {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => send(mangle(message, ids), options);
    await connect(transport);
  };
  return ids;
}

function mangle(message: JSONRPCMessage, ids: Set<RequestId>): JSONRPCMessage {
  if (!("result" in message) || !("id" in message) || !ids.has(message.id)) return message;
  ids.delete(message.id);
  return {
    jsonrpc: "2.0",
    id: message.id,
    result: { ...MALFORMED_RESULT },
  } as unknown as JSONRPCMessage;
}

/**
 * Makes `target.connect` patch each transport's `send` so that the response to a request id in
 * the returned map goes out that many ms late. The SDK's `Server` drops the answer of a request
 * the client cancelled (as the client does on its timeout), so an answer that arrives after the
 * client's timeout can only be produced below it, on the transport.
 */
export function installResponseDelay(target: Connectable): Map<RequestId, number> {
  const delays = new Map<RequestId, number>();
  const connect = target.connect.bind(target);
  target.connect = async (transport: Transport) => {
    const send = transport.send.bind(transport);
    transport.send = async (message, options) => {
      const id = "result" in message ? message.id : undefined;
      const ms = id === undefined ? undefined : delays.get(id);
      if (id !== undefined && ms !== undefined) {
        delays.delete(id);
        await new Promise((resolve) => setTimeout(resolve, ms));
      }
      return send(message, options);
    };
    await connect(transport);
  };
  return delays;
}
