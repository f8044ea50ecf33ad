/**
 * The proxy's message path without the SDK's repeated schema checks, in one place. The SDK checks
 * each message it reads against its JSON-RPC schemas (zod) as the stdio transport parses it, then
 * again, up to four times, as the Protocol sorts it into request, notification or response (a
 * failing check, the usual case for a request, costs most). Here each line is parsed once and its
 * envelope checked by hand (jsonrpc-envelope.ts, the rules of the schemas: an object, `jsonrpc`
 * "2.0", an id a string or an integer, `params` an object, a response with exactly one of `result`
 * or `error`; unknown top-level fields are let through, where the SDK's strict schemas refuse the
 * message), and the Protocol is handed the message by kind. Request params and results are still
 * checked by the SDK's schemas of each method.
 *
 * Tool calls, the proxy's hot path, do not reach the Protocol at all: the host's are answered by
 * tool-call-route.ts and the server's answers are taken by upstream-tool-calls.ts, both off the
 * transport. What is left here serves everything else, and reads the server's lines once
 * (`LineReadBuffer`) for the tool calls too.
 *
 * Both parts lean on SDK internals (`StdioClientTransport._readBuffer`, `Protocol._onrequest`,
 * `_onresponse`, `_onnotification`); each is installed only when they are there, so an SDK without
 * them runs its own path. test/proxy*.test.ts run the proxy on this path; fast-path.test.ts
 * checks it against the SDK's own.
 */
import { StringDecoder } from "node:string_decoder";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { checkHostMessage } from "./jsonrpc-envelope.ts";

/** The longest line kept while waiting for its end, in characters (as the SDK's 10 MiB). */
const MAX_LINE = 10 * 1024 * 1024;

/**
 * The read buffer of the SDK's stdio client transport (`append`, `readMessage`, `clear`), reading
 * each line once. A line that is not JSON, or not a JSON-RPC message, throws, as the SDK's does
 * (its transport reports it through `onerror` and reads on).
 */
export class LineReadBuffer {
  #decoder = new StringDecoder("utf8");
  #text = "";

  append(chunk: Buffer): void {
    this.#text += this.#decoder.write(chunk);
    if (this.#text.length > MAX_LINE && !this.#text.includes("\n")) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${MAX_LINE} characters`);
    }
  }

  readMessage(): JSONRPCMessage | null {
    const end = this.#text.indexOf("\n");
    if (end === -1) return null;
    const line = this.#text.slice(0, this.#text.charCodeAt(end - 1) === 13 ? end - 1 : end);
    this.#text = this.#text.slice(end + 1);
    const checked = checkHostMessage(JSON.parse(line));
    if (checked.kind !== "message") throw new Error(`Invalid JSON-RPC message: ${checked.message}`);
    return checked.message;
  }

  clear(): void {
    this.#text = "";
    this.#decoder = new StringDecoder("utf8");
  }
}

/**
 * Gives an SDK stdio client transport a {@link LineReadBuffer}, before it starts; answers whether
 * it could (a transport without a read buffer, such as Streamable HTTP, keeps its own path).
 */
export function useLineReadBuffer(transport: Transport): boolean {
  const held = transport as unknown as { _readBuffer?: unknown };
  const current = held._readBuffer as { readMessage?: unknown } | undefined;
  if (typeof current?.readMessage !== "function") return false;
  held._readBuffer = new LineReadBuffer();
  return true;
}

/** What the Protocol does with a message once it knows its kind. */
interface Dispatch {
  _onrequest(message: JSONRPCMessage, extra: unknown): void;
  _onresponse(message: JSONRPCMessage): void;
  _onnotification(message: JSONRPCMessage): void;
}

/**
 * Replaces the handler `protocol.connect(transport)` set on a transport whose messages are checked
 * already ({@link LineReadBuffer}, host-stdio.ts) by one that hands each to the Protocol by kind,
 * as the SDK's does once its schemas have sorted it. Call it right after `connect`, before any
 * other wrapper of `onmessage`. Answers whether it could.
 */
export function dispatchChecked(protocol: object, transport: Transport): boolean {
  const target = protocol as Partial<Dispatch>;
  const { _onrequest, _onresponse, _onnotification } = target;
  if (
    typeof _onrequest !== "function" ||
    typeof _onresponse !== "function" ||
    typeof _onnotification !== "function"
  ) {
    return false;
  }
  transport.onmessage = (message, extra) => {
    if (!("method" in message)) _onresponse.call(target, message);
    else if ("id" in message) _onrequest.call(target, message, extra);
    else _onnotification.call(target, message);
  };
  return true;
}
