/**
 * The proxy's `tools/call` requests to the real server, sent on the transport without the SDK's
 * `Protocol.request`: the other half of the proxy's hot path (tool-call-route.ts is the host's).
 * The SDK would make a request of closures and timers per call and check each answer against its
 * JSON-RPC schemas before the result's own; here the answer is matched by its id off the
 * transport and only the result is checked, with the schema the caller gave.
 *
 * What the caller sees is what `Protocol.request` gives: the result parsed by `resultSchema` (or
 * its `ZodError`), or, for the SDK's own `CallToolResultSchema` and a result in the shape servers
 * usually send (`plainToolResult`), the result as it was read, which that schema would hand on
 * equal; an error answer as `McpError` (`McpError.fromError`); on the caller's abort,
 * `notifications/cancelled` to the server with the reason and an `McpError` -32001 of it (the
 * reason itself when it is one); at the timeout, the same with "Request timed out" and
 * `{timeout}`; when the connection closes, -32000 "Connection closed" after the client's own
 * `onclose`; "Not connected" without a transport; a failed send's error. A request with progress,
 * tasks or resumption options goes to the SDK's `request`.
 *
 * Its ids are strings (`governor-1`, …), never the SDK's numbers: an answer with one of them is
 * this module's, any other goes on to the SDK (a late answer is reported there, as today).
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type AnySchema, safeParse } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolResultSchema,
  ErrorCode,
  type JSONRPCMessage,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { isPlainObject } from "./jsonrpc-envelope.ts";

/** The SDK's default request timeout, in ms. */
const DEFAULT_TIMEOUT_MS = 60_000;

/** The options of `Protocol.request` this module sends itself; any other goes to the SDK. */
interface PlainOptions {
  readonly signal?: AbortSignal;
  readonly timeout?: number;
}

/** One request out: settles its caller's promise once. */
interface Pending {
  answer(message: Record<string, unknown>): void;
  close(error: Error): void;
}

type Request = { method: string; params?: Record<string, unknown> };
type RequestFn = (request: Request, schema?: unknown, options?: unknown) => Promise<unknown>;

const HANDLED = new Set(["signal", "timeout"]);

/** Whether a request goes out here: a `tools/call` with no option but a signal and a timeout. */
function plain(request: Request, schema: unknown, options: unknown): options is PlainOptions {
  if (request.method !== "tools/call") return false;
  if (typeof schema !== "object" || schema === null) return false;
  if (options === undefined) return true;
  if (typeof options !== "object" || options === null) return false;
  for (const key in options) {
    if ((options as Record<string, unknown>)[key] !== undefined && !HANDLED.has(key)) return false;
  }
  return true;
}

/** A content block `{type: "text", text}` with no other key. */
function plainTextBlock(block: unknown): boolean {
  if (!isPlainObject(block) || block.type !== "text" || typeof block.text !== "string") {
    return false;
  }
  let keys = 0;
  for (const _ in block) keys += 1;
  return keys === 2;
}

/**
 * Whether a tools/call result is in the shape servers usually send, which the SDK's
 * `CallToolResultSchema` accepts and hands on equal (its keys in its own order): `content` an
 * array of text blocks with no other key, `isError` a boolean and `structuredContent` an object
 * when present, no `_meta`; any other key is kept as it is (the schema is loose). Such a result is
 * used as it was read, without the schema's copy (about 20 µs of the proxy's CPU a call, cold as
 * it runs between two stdio hops); any other goes through the schema, which strips, defaults or
 * refuses as it does.
 */
export function plainToolResult(result: unknown): boolean {
  if (!isPlainObject(result)) return false;
  let content = false;
  for (const key in result) {
    const value = result[key];
    if (key === "content") {
      if (!Array.isArray(value)) return false;
      for (const block of value) if (!plainTextBlock(block)) return false;
      content = true;
    } else if (key === "isError") {
      if (typeof value !== "boolean") return false;
    } else if (key === "structuredContent") {
      if (!isPlainObject(value)) return false;
    } else if (key === "_meta") {
      return false;
    }
  }
  return content;
}

/**
 * One request out: settles its caller's promise once, from the answer, the connection's close,
 * the caller's abort, the timeout or a failed send. An object of its own, not closures per call.
 */
class OutRequest implements Pending {
  constructor(
    readonly client: Client,
    readonly transport: Transport,
    readonly pending: Map<string, OutRequest>,
    readonly id: string,
    readonly schema: AnySchema,
    readonly signal: AbortSignal | undefined,
    readonly resolve: (value: unknown) => void,
    readonly reject: (reason: unknown) => void,
    /** Its timeout, in ms, and when it runs out (`Date.now()` time). */
    readonly timeout: number,
    readonly deadline: number,
  ) {}

  answer(message: Record<string, unknown>): void {
    this.pending.delete(this.id);
    if (this.signal?.aborted) return;
    if ("error" in message) {
      const error = message.error as { code: number; message: string; data?: unknown };
      this.reject(McpError.fromError(error.code, error.message, error.data));
      return;
    }
    if (this.schema === CallToolResultSchema && plainToolResult(message.result)) {
      this.resolve(message.result);
      return;
    }
    try {
      // The SDK's own parse: its errors are the SDK's (`$ZodError`).
      const parsed = safeParse(this.schema, message.result);
      if (parsed.success) this.resolve(parsed.data);
      else this.reject(parsed.error);
    } catch (error) {
      this.reject(error);
    }
  }

  close(error: Error): void {
    this.reject(error);
  }

  /**
   * The caller's signal aborted: this request is its `abort` listener (an object with
   * `handleEvent`, as an `EventTarget` takes one), not a closure made per request.
   */
  handleEvent(): void {
    this.cancel(this.signal?.reason);
  }

  /** The caller's abort or the timeout: the server is told, the caller gets an `McpError`. */
  cancel(reason: unknown): void {
    if (!this.pending.delete(this.id)) return;
    const { client } = this;
    this.transport
      .send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: this.id, reason: String(reason) },
      })
      .catch((error: unknown) =>
        client.onerror?.(new Error(`Failed to send cancellation: ${error}`)),
      );
    this.reject(
      reason instanceof McpError ? reason : new McpError(ErrorCode.RequestTimeout, String(reason)),
    );
  }

  sendFailed(error: unknown): void {
    if (!this.pending.delete(this.id)) return;
    this.reject(error);
  }

  timedOut(): void {
    const { timeout } = this;
    this.cancel(McpError.fromError(ErrorCode.RequestTimeout, "Request timed out", { timeout }));
  }
}

/** The longest timer Node keeps (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The requests out on one transport, by id, with one timer for all their timeouts instead of one
 * per request: armed for the earliest deadline, it times out every request past its deadline and
 * is armed again for the next. A request that settles leaves the timer as it is (an early fire
 * finds nothing to do), so a call whose deadline is not the earliest (the usual case: calls one
 * after another with the same timeout) arms and clears none. The timer is unref'd: a request out
 * is always on a transport that keeps the process alive.
 */
class RequestsOut extends Map<string, OutRequest> {
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #armedFor = Number.POSITIVE_INFINITY;

  /** Adds a request out, and arms the timer for its deadline when it is the earliest. */
  hold(out: OutRequest): void {
    this.set(out.id, out);
    this.#arm(out.deadline);
  }

  #arm(at: number): void {
    if (this.#timer !== undefined && this.#armedFor <= at) return;
    clearTimeout(this.#timer);
    this.#armedFor = at;
    this.#timer = setTimeout(expire, Math.min(Math.max(1, at - Date.now()), MAX_TIMER_MS), this);
    this.#timer.unref();
  }

  /** The timer fired: every request past its deadline times out; the timer waits for the next. */
  expire(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const out of [...this.values()]) {
      if (out.deadline <= now) out.timedOut();
      else if (out.deadline < next) next = out.deadline;
    }
    if (next !== Number.POSITIVE_INFINITY && this.size > 0) this.#arm(next);
  }

  /** The transport closed: no request is left to time out. */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }
}

/** The timer of a {@link RequestsOut} (a module function: the timer holds no closure). */
function expire(requests: RequestsOut): void {
  requests.expire();
}

/**
 * Sends `client`'s tools/call requests itself on each transport given to `attach` (call it right
 * after `client.connect(transport)`); the rest go through the SDK.
 */
export function sendToolCallsDirectly(client: Client): { attach(transport: Transport): void } {
  const routes = new WeakMap<Transport, RequestsOut>();
  let next = 0;
  const sdkRequest = client.request.bind(client) as RequestFn;

  const direct = (request: Request, schema: AnySchema, options: PlainOptions = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const transport = client.transport;
      const pending = transport === undefined ? undefined : routes.get(transport);
      if (transport === undefined || pending === undefined) {
        reject(new Error("Not connected"));
        return;
      }
      const { signal } = options;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const id = `governor-${++next}`;
      const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
      const out = new OutRequest(
        client,
        transport,
        pending,
        id,
        schema,
        signal,
        resolve,
        reject,
        timeout,
        Date.now() + timeout,
      );
      pending.hold(out);
      signal?.addEventListener("abort", out);
      const message = { method: request.method, params: request.params, jsonrpc: "2.0", id };
      let sent: Promise<void>;
      try {
        sent = transport.send(message as JSONRPCMessage);
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.catch((error: unknown) => out.sendFailed(error));
    });

  (client as unknown as { request: RequestFn }).request = (request, schema, options) =>
    plain(request, schema, options)
      ? direct(request, schema as AnySchema, options)
      : sdkRequest(request, schema, options);

  return {
    attach(transport) {
      const pending = new RequestsOut();
      routes.set(transport, pending);
      const inner = transport.onmessage;
      transport.onmessage = (message, extra) => {
        if (!("method" in message)) {
          const id = (message as { id?: unknown }).id;
          const waiting = typeof id === "string" ? pending.get(id) : undefined;
          if (waiting !== undefined) return waiting.answer(message as Record<string, unknown>);
        }
        inner?.(message, extra);
      };
      const innerClose = transport.onclose;
      transport.onclose = () => {
        // After the client's own: it drops its transport and tells its onclose first.
        innerClose?.();
        const error = McpError.fromError(ErrorCode.ConnectionClosed, "Connection closed");
        const left = [...pending.values()];
        pending.clear();
        pending.stop();
        for (const waiting of left) waiting.close(error);
      };
    },
  };
}
