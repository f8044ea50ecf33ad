/**
 * The proxy's stdio to its host: newline-delimited JSON-RPC, each line parsed once (`JSON.parse`)
 * and its envelope checked by hand (jsonrpc-envelope.ts) instead of by the SDK's schemas. What a
 * host should not send is answered as JSON-RPC asks, and told to `onProblem` (stderr): a line that
 * is not JSON with -32700, a batch, `id: null` or a message that is not an object with -32600, and
 * bad params of a request with -32602. The SDK's `StdioServerTransport` drops such lines with no
 * answer, and a host waits for ever.
 */
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/sdk/types.js";
import {
  checkHostMessage,
  INVALID_PARAMS,
  PARSE_ERROR,
  toolCallParamsProblem,
} from "./jsonrpc-envelope.ts";

/** The longest line kept while waiting for its end, in UTF-16 code units (as the SDK's 10 MiB). */
const MAX_LINE = 10 * 1024 * 1024;

/** The answer of a `send` whose line the pipe took at once (one promise for all of them). */
const SENT: Promise<void> = Promise.resolve();

/** What the host sent that the proxy answered or dropped (for stderr). */
export type HostProblem = (message: string) => void;

export class HostStdioTransport implements Transport {
  onmessage?: Transport["onmessage"];
  onerror?: Transport["onerror"];
  onclose?: Transport["onclose"];
  #pending = "";
  /** The rest of a line that was too long is dropped up to its end. */
  #skipping = false;
  #started = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    private readonly onProblem: HostProblem = () => undefined,
  ) {}

  async start(): Promise<void> {
    if (this.#started) throw new Error("HostStdioTransport already started");
    this.#started = true;
    this.stdin.setEncoding("utf8");
    this.stdin.on("data", this.#ondata);
    this.stdin.on("error", this.#onerror);
  }

  /** Writes one line; settled at once unless the pipe is full (then at its `drain`). */
  send(message: JSONRPCMessage): Promise<void> {
    let written: boolean;
    try {
      written = this.stdout.write(`${JSON.stringify(message)}\n`);
    } catch (error) {
      return Promise.reject(error);
    }
    if (written) return SENT;
    return new Promise((resolve) => {
      this.stdout.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    this.stdin.off("data", this.#ondata);
    this.stdin.off("error", this.#onerror);
    if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
    this.#pending = "";
    this.onclose?.();
  }

  readonly #onerror = (error: Error): void => {
    this.onerror?.(error);
  };

  readonly #ondata = (chunk: string): void => {
    let text = this.#pending + chunk;
    let start = 0;
    if (this.#skipping) {
      const end = text.indexOf("\n");
      if (end === -1) return;
      this.#skipping = false;
      start = end + 1;
    }
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      const line =
        text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end);
      start = end + 1;
      if (line.trim() !== "") this.#line(line);
    }
    text = start === 0 ? text : text.slice(start);
    if (text.length > MAX_LINE) {
      text = "";
      this.#skipping = true;
      this.#reject(PARSE_ERROR, `Parse error: a line is longer than ${MAX_LINE} characters`, null);
    }
    this.#pending = text;
  };

  #line(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      this.#reject(
        PARSE_ERROR,
        `Parse error: ${(error as Error).message}`,
        null,
        "a line from the host is not JSON",
      );
      return;
    }
    const checked = checkHostMessage(value);
    if (checked.kind === "drop") {
      this.onProblem(`invalid message dropped: ${checked.message}`);
      return;
    }
    if (checked.kind === "reject") {
      this.#reject(checked.code, checked.message, checked.id);
      return;
    }
    const message = checked.message;
    if ("method" in message && message.method === "tools/call" && "id" in message) {
      const problem = toolCallParamsProblem(message.params);
      if (problem !== undefined) {
        this.#reject(INVALID_PARAMS, `Invalid params: ${problem}`, message.id);
        return;
      }
    }
    this.onmessage?.(message);
  }

  #reject(code: number, message: string, id: RequestId | null, why?: string): void {
    const kind =
      code === PARSE_ERROR
        ? "parse error"
        : code === INVALID_PARAMS
          ? "invalid params"
          : "invalid request";
    this.onProblem(`${kind}: ${why ?? message} (answered ${code}, id ${JSON.stringify(id)})`);
    this.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } })}\n`);
  }
}
